"""User environments by name: `register_env("my-env", maker)`, then `--config.env.name=my-env`.

`sebulba.envs.make_env` and `check_env_id` consult this registry before EnvPool, so a user
script registers its environment once (at import) and every experiment main, the evaluation
scripts and the config validation find it. A maker is

    maker(num_envs: int, seed: int, env_config: sebulba.envs.EnvConfig) -> env batch

where the env batch has the runtime's API (sebulba/envs.py), or is a gymnasium VectorEnv
(autoreset NEXT_STEP) or a list of dm_env environments, which sebulba/adapters.py wraps. Env i of
the batch should be seeded with seed + i. `env_config.options` carries the user's own settings
(`config.env.options` in the experiment config).

Names with the prefix "gymnasium:" need no registration: "gymnasium:LunarLander-v3" runs the
gymnasium-registered id through sebulba.adapters.gymnasium_make.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

EnvMaker = Callable[[int, int, Any], Any]
GYMNASIUM_PREFIX = "gymnasium:"

_ENVS: dict[str, EnvMaker] = {}
_LOCK = threading.Lock()


def register_env(name: str, maker: EnvMaker, *, overwrite: bool = False) -> None:
    """Registers `maker` under `name`; re-registering a name needs overwrite=True (a second
    module silently replacing an env would train on the wrong one)."""
    if not isinstance(name, str) or not name or name.startswith(GYMNASIUM_PREFIX):
        raise ValueError(f"env name {name!r} must be a non-empty string not starting with "
                         f"{GYMNASIUM_PREFIX!r}.")
    if not callable(maker):
        raise TypeError(f"maker for {name!r} must be callable (num_envs, seed, env_config) -> "
                        f"env batch; got {maker!r}.")
    with _LOCK:
        old = _ENVS.get(name)
        # The same function again (a module imported twice, importlib.reload) is no clash.
        same = old is maker or (old is not None and _qualified(old) == _qualified(maker))
        if old is not None and not same and not overwrite:
            raise ValueError(f"env {name!r} is already registered ({_ENVS[name]!r}); pass "
                             f"overwrite=True to replace it.")
        _ENVS[name] = maker


def unregister_env(name: str) -> None:
    """Removes a registered env (tests); unknown names are ignored."""
    with _LOCK:
        _ENVS.pop(name, None)


def env_maker(name: str) -> EnvMaker | None:
    """The maker registered under `name`, or None."""
    return _ENVS.get(name)


def registered_envs() -> tuple[str, ...]:
    return tuple(sorted(_ENVS))


def _qualified(obj: Any) -> tuple[str, str] | object:
    """Module and name of a top-level function or class; a unique token for anything else
    (lambdas and local definitions share names, so they never count as the same)."""
    name = getattr(obj, "__qualname__", "<")
    return (obj.__module__, name) if "<" not in name else object()
