"""PPO on a JAX-native environment (gymnax CartPole-v1 by default) with the Anakin runtime:
acting, env steps and learning in one compiled program over the devices (docs/anakin.md).

    python experiments/ppo_gymnax.py --config=experiments/configs/ppo_gymnax.py

`runtime` picks the runtime: "anakin" (the env must be JAX-native: gymnax:<id> or one
registered with anakin.envs.register_env) or "sebulba" (the same agent and hyperparameters on
host env batches: the same JAX env stepped from the host, or an EnvPool id, e.g.
`--config.runtime=sebulba --config.env.name=CartPole-v1`). `num_seeds` and `vary` train many
agents in one program (Anakin; docs/anakin.md).
Under Anakin, `learner_device_ids` are the devices (each acts, steps envs and learns) and
`num_envs` the environments per process, split over them.

Hyperparameters: experiments/configs/ppo_classic.py's (cleanrl's classic-control PPO with
lr 1e-3, no reward clipping), on-policy (Anakin has no policy lag), with 64 envs x 32 steps
per update.
"""
import ml_collections

from agents.ppo.config import PPOConfig
from experiments.configs.common import (agent_fields, anakin_fields, network_fields,
                                        runtime_fields, vector_env)


VARIANTS = ("default", "debug")


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "ppo"
    anakin_fields(config)
    config.runtime = "anakin"          # anakin (JAX-native envs) | sebulba (EnvPool envs)
    config.synchronous = True          # on-policy (Anakin always is)
    config.num_actor_threads = 1
    config.num_envs = 64               # anakin: envs per process, split over the devices
    config.unroll_length = 32
    config.total_env_steps = 500_000
    config.checkpoint_every_minutes = 0.0  # a run is short: only the final checkpoint
    config.env = vector_env("gymnax:CartPole-v1")
    config.env.options = ml_collections.ConfigDict()  # gymnax EnvParams overrides
    # auto: an MLP on a vector observation (the same parameters as torso="mlp"), one encoder
    # per leaf of a dict observation (networks/encoders.py).
    config.network = network_fields("auto", shared_torso=False)
    config.agent = agent_fields(PPOConfig(
        learning_rate=1e-3, clip_eps=0.2, value_clip_eps=0.2, reward_clip=0.0, loop="scan"))
    if variant == "debug":
        config.total_env_steps = 4_096
        config.console_every_s = 0.0
    return config
