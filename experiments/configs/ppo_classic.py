"""PPO on EnvPool classic control (CartPole-v1 by default); trains in about a minute on a CPU.

Variants: `:sync` (on-policy, policy lag 0), `:debug` (a few updates). The default is
asynchronous with V-trace correction (agent.correction="auto").

Tuned here for CartPole from cleanrl's ppo.py classic-control defaults (4 epochs, 4
minibatches, gamma 0.99, GAE 0.95, clip 0.2, entropy 0.01, value cost 0.5, grad-norm 0.5, Adam
with eps 1e-5, annealed lr); we use 16 envs x 64 steps (cleanrl: 4 x 128) and lr 1e-3 (cleanrl:
2.5e-4) so that it reaches return ~500 within 300k steps; rewards are not clipped.
"""
import ml_collections

from agents.ppo.config import PPOConfig
from experiments.configs.common import agent_fields, network_fields, runtime_fields, vector_env


VARIANTS = ("default", "sync", "debug")


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "ppo"
    config.num_actor_threads = 1
    config.num_envs = 16
    config.unroll_length = 64
    config.total_env_steps = 300_000
    config.env = vector_env("CartPole-v1")
    # auto: an MLP on a vector observation (the same parameters as torso="mlp"), one encoder
    # per leaf of a dict observation (networks/encoders.py).
    config.network = network_fields("auto", shared_torso=False)
    config.agent = agent_fields(PPOConfig(
        learning_rate=1e-3, clip_eps=0.2, value_clip_eps=0.2, reward_clip=0.0, loop="scan"))
    if variant == "sync":
        config.synchronous = True
    elif variant == "debug":
        config.total_env_steps = 4_096
        config.console_every_s = 0.0
    return config
