"""Config for the masked-CartPole example; variants `:lstm` (default), `:ff` (feed-forward, the
control) and `:debug` (a few updates).

The library's PPO CartPole config (experiments/configs/ppo_classic.py: asynchronous PPO with
V-trace correction, 16 envs x 64 steps, 4 epochs x 4 minibatches of whole env columns) on
`MaskedCartPole-v1`, registered by importing `examples.masked_cartpole`.
"""
import ml_collections

from experiments.configs import ppo_classic

VARIANTS = ("lstm", "ff", "debug")


def get_config(variant: str = "lstm") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    config = ppo_classic.get_config()
    config.agent_name = "ppo"
    config.env.name = "MaskedCartPole-v1"   # registered by examples/masked_cartpole
    config.env.options = ml_collections.ConfigDict(dict(
        noise_std=0.0,                 # std of Gaussian noise on the two kept observations
    ))
    config.total_env_steps = 500_000
    config.network.lstm_size = 0 if variant == "ff" else 64  # LSTM units (0: feed-forward)
    if variant == "debug":
        config.total_env_steps = 4_096
        config.console_every_s = 0.0
    return config
