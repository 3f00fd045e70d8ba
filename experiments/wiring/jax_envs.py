"""A JAX-native env from the env section, for either runtime: Anakin steps it on the devices,
Sebulba on the host (sebulba/jax_host_env.py), so one experiment runs on both. The neutral
home of the adapter both drivers use."""
from __future__ import annotations

from anakin import envs as anakin_envs
from podracer.validation import ConfigError


def make_env(env_config) -> anakin_envs.AutoReset:
    """The JAX-native env `env.name` names, with `env.options` and `env.randomize`; a
    ConfigError naming it when there is none."""
    try:
        return anakin_envs.make_env(env_config.name, dict(env_config.options or {}),
                                    env_config.randomize)
    except ValueError as e:
        raise ConfigError(f"env.name={env_config.name!r}: {e}") from None


def names_a_jax_env(name: str) -> bool:
    """Whether `name` is a JAX-native env (gymnax:<id>, another JAX suite, or registered with
    anakin.envs.register_env)."""
    return anakin_envs.names_a_jax_env(name)
