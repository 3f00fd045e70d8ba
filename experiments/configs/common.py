"""Config sections every experiment config shares: runtime and run, env, network, agent.

Each experiment config (flax-examples style `get_config()`) builds its ConfigDict from these
and then sets only what differs. Every section is generated from its dataclass
(experiments/wiring/sections.py lists them), so a field means the same in every config and its
default and comment live in one place: that dataclass.
"""
import ml_collections

from anakin.runtime_config import AnakinConfig
from experiments.wiring.run_config import RunConfig
from networks import NetworkConfig
from podracer.distributed import DistributedConfig
from podracer.logging import WandbConfig
from podracer.schema import config_dict
from sebulba.envs import EnvConfig
from sebulba.runtime_config import RuntimeConfig


def runtime_fields(config: ml_collections.ConfigDict) -> None:
    """The top-level fields every experiment config has, with their defaults and comments in
    one place each: the Sebulba runtime (sebulba.runtime_config.RuntimeConfig), the run
    (experiments/wiring/run_config.py: agent, runtime, run dir, checkpoints, evaluation,
    console), `config.distributed` (podracer.distributed.DistributedConfig) and `config.wandb`
    (podracer.logging.WandbConfig)."""
    config.update(config_dict(RuntimeConfig()))
    config.update(config_dict(RunConfig()))
    config.distributed = config_dict(DistributedConfig())
    config.wandb = config_dict(WandbConfig())


def anakin_fields(config: ml_collections.ConfigDict) -> None:
    """The Anakin runtime's own top-level fields (anakin.runtime_config.AnakinConfig), for a config
    that runs on it; the fields both runtimes read (seed, num_envs, unroll_length, ...) come
    from `runtime_fields`."""
    for key, value in config_dict(AnakinConfig()).items():
        if key not in config:
            config[key] = value


def atari_env(name: str = "Breakout-v5") -> ml_collections.ConfigDict:
    """EnvPool Atari settings (sebulba.envs.EnvConfig's defaults: the Machado et al. 2018
    protocol's sticky actions; evaluation plays whole games)."""
    return config_dict(EnvConfig(name=name))


def tiny_atari(config: ml_collections.ConfigDict) -> None:
    """The `:debug` variants on Atari: Pong, Nature CNN, 4 envs x 8 steps, 256 steps in all
    (seconds on a laptop CPU; smoke tests)."""
    config.env.name = "Pong-v5"
    config.network.torso = "nature_cnn"
    config.num_envs = 4
    config.unroll_length = 8
    config.total_env_steps = 256
    config.console_every_s = 0.0


def vector_env(name: str) -> ml_collections.ConfigDict:
    """Settings for a non-Atari env (EnvPool classic control / MuJoCo, gymnasium:<id>, or a
    registered one). The Atari-only fields keep their defaults so that `--config.env.name`
    can switch between families; they are ignored here."""
    config = atari_env(name)
    config.name = name                 # EnvPool id, gymnasium:<id> or a registered env
    return config


def network_fields(torso: str, shared_torso: bool) -> ml_collections.ConfigDict:
    """The actor-critic network section (networks.NetworkConfig documents each field)."""
    return config_dict(NetworkConfig(torso=torso, shared_torso=shared_torso))


def agent_fields(defaults) -> ml_collections.ConfigDict:
    """The agent's frozen dataclass defaults as a ConfigDict (one source of truth)."""
    return config_dict(defaults)
