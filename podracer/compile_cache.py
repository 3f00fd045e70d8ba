"""JAX's persistent compilation cache, on by default for training runs.

A second launch of the same experiment loads the compiled policy and learner from disk instead
of compiling them again (seconds instead of minutes for a ResNet learner on a GPU). The cache
is keyed by the program, the JAX/XLA version and the devices, so a changed network, batch size
or device layout simply compiles anew. `compilation_cache_dir` in the runtime config sets the
location (default `~/.cache/sebulba-rl/jax`); an empty string turns it off.
"""
from __future__ import annotations

import os

import jax

DEFAULT_DIR = "~/.cache/sebulba-rl/jax"
# Programs that compile faster than this are not written (CartPole's policy compiles in ~0.1 s:
# caching it would cost a file per shape for nothing), unless the user sets JAX's own variable.
_MIN_COMPILE_S = 0.2
_MIN_COMPILE_ENV = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"


def enable(cache_dir: str) -> str | None:
    """Points JAX's persistent cache at `cache_dir` (`~` expanded, created); returns the path,
    or None when `cache_dir` is empty (cache off). Call before the first compilation.

    Programs that compile in under 0.2 s are not written, unless
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS is set (JAX's own setting, then kept)."""
    if not cache_dir:
        return None
    path = os.path.abspath(os.path.expanduser(cache_dir))
    os.makedirs(path, exist_ok=True)
    if jax.config.jax_compilation_cache_dir != path:
        jax.config.update("jax_compilation_cache_dir", path)
        if _MIN_COMPILE_ENV not in os.environ:
            jax.config.update("jax_persistent_cache_min_compile_time_secs", _MIN_COMPILE_S)
    return path
