"""Sebulba's user environments by name: `register_env("my-env", maker)`, then
`--config.env.name=my-env`. `sebulba.envs.make_env` and `check_env_id` consult it before
EnvPool, so a user script registers its environment once (at import) and every experiment
main, the evaluation scripts and the config validation find it. A maker is

    maker(num_envs: int, seed: int, env_config: sebulba.envs.EnvConfig) -> env batch

where the env batch has the runtime's API (sebulba/envs.py), or is a gymnasium VectorEnv
(autoreset NEXT_STEP) or a list of dm_env environments, which sebulba/adapters.py wraps. Env i of
the batch should be seeded with seed + i. `env_config.options` carries the user's own settings
(`config.env.options` in the experiment config). Names with the prefix "gymnasium:" need no
registration: "gymnasium:LunarLander-v3" runs the gymnasium-registered id through
sebulba.adapters.gymnasium_make. The registry's rules are podracer.registry.Registry's.
"""
from __future__ import annotations

from typing import Any, Callable

from podracer.registry import Registry


EnvMaker = Callable[[int, int, Any], Any]
GYMNASIUM_PREFIX = "gymnasium:"


def _check_env(name: str, maker: Any) -> None:
    if name.startswith(GYMNASIUM_PREFIX):
        raise ValueError(f"env name {name!r} must not start with {GYMNASIUM_PREFIX!r} (those "
                         f"names need no registration).")
    if not callable(maker):
        raise TypeError(f"maker for {name!r} must be callable (num_envs, seed, env_config) -> "
                        f"env batch; got {maker!r}.")


ENVS: Registry[EnvMaker] = Registry(
    "env", how="sebulba.registry.register_env; load the module that registers yours with "
    "--import", check=_check_env)


def register_env(name: str, maker: EnvMaker, *, overwrite: bool = False) -> None:
    """Registers `maker` under `name`; re-registering a name needs overwrite=True (a second
    module silently replacing an env would train on the wrong one)."""
    ENVS.register(name, maker, overwrite=overwrite)


def unregister_env(name: str) -> None:
    """Removes a registered env (tests); unknown names are ignored."""
    ENVS.unregister(name)


def env_maker(name: str) -> EnvMaker | None:
    """The maker registered under `name`, or None."""
    return ENVS.find(name)


def registered_envs() -> tuple[str, ...]:
    return tuple(ENVS.names())
