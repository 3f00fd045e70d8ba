"""IMPALA on EnvPool Atari. Variants: `:debug` (tiny, seconds on a laptop CPU).

Hyperparameter sources are cited in agents/impala/config.py; the layout (64 envs in 2 threads,
unroll 20) follows cleanba's IMPALA Atari setup scaled to one device.
"""
import ml_collections

from agents.impala.config import ImpalaConfig
# Re-exported: user configs written against this module keep working.
from experiments.configs.common import (agent_fields, atari_env, network_fields,  # noqa: F401
                                        runtime_fields, tiny_atari)


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.env = atari_env("Breakout-v5")
    config.network = network_fields("impala_resnet", shared_torso=True)
    config.agent = agent_fields(ImpalaConfig())  # see agents/impala/config.py for each field
    if variant == "debug":
        tiny_atari(config)
    elif variant != "default":
        raise ValueError(f"unknown variant {variant!r}; allowed: 'default', 'debug'.")
    return config
