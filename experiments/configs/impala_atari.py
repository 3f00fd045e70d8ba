"""IMPALA on EnvPool Atari. Variants: `:cpu` (sized for a CPU), `:debug` (tiny, seconds on a
laptop CPU).

The default trains the IMPALA ResNet, a GPU-sized network: on a CPU it runs at ~10-20 env
steps/s after minutes of compilation. `:cpu` trains the Nature CNN on 2 threads x 16 envs, the
layout measured in the README's throughput table (436 steps/s end to end on 2 quiet cores;
150-190 on the same machine shared at load 7).

Hyperparameter sources are cited in agents/impala/config.py; the layout (64 envs in 2 threads,
unroll 20) follows cleanba's IMPALA Atari setup scaled to one device.
"""
import ml_collections

from agents.impala.config import ImpalaConfig
# Re-exported: user configs written against this module keep working.
from experiments.configs.common import (agent_fields, atari_env, network_fields,  # noqa: F401
                                        runtime_fields, tiny_atari)


def cpu_atari(config: ml_collections.ConfigDict) -> None:
    """`:cpu`: what a CPU backend trains at a useful rate. The Nature CNN instead of the IMPALA
    ResNet (whose backward pass dominates on a CPU), 2 actor threads x 16 envs (2 cores: one
    thread steps its envs while the other waits for inference), and a budget a CPU finishes in
    hours, not weeks."""
    config.network.torso = "nature_cnn"
    config.num_actor_threads = 2
    config.num_envs = 16
    config.total_env_steps = 2_000_000  # ~1.5 h at ~400 steps/s


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.env = atari_env("Breakout-v5")
    config.network = network_fields("impala_resnet", shared_torso=True)
    config.agent = agent_fields(ImpalaConfig())  # see agents/impala/config.py for each field
    if variant == "debug":
        tiny_atari(config)
    elif variant == "cpu":
        cpu_atari(config)
    elif variant != "default":
        raise ValueError(f"unknown variant {variant!r}; allowed: 'default', 'cpu', 'debug'.")
    return config
