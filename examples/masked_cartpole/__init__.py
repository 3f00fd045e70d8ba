"""Partial observability on a classic task: CartPole with the velocities hidden.

Importing this package registers `MaskedCartPole-v1`: gymnasium's CartPole-v1 whose observation
keeps only the cart position and the pole angle (the two velocities are dropped), optionally
with Gaussian sensor noise (`--config.env.options.noise_std=0.05`). A feed-forward policy sees
one frame and cannot tell which way the pole is falling; an LSTM agent
(`network.lstm_size > 0`) recovers the velocities from the history. Commands and measured
results: examples/masked_cartpole/README.md.
"""
from __future__ import annotations

import gymnasium
import numpy as np

from sebulba import adapters
from sebulba.registry import register_env

ENV_NAME = "MaskedCartPole-v1"
KEPT = (0, 2)  # cart position, pole angle (CartPole's obs: x, x_dot, theta, theta_dot)


class MaskVelocities(gymnasium.ObservationWrapper):
    """Drops CartPole's velocities; adds N(0, noise_std^2) to what is left."""

    def __init__(self, env: gymnasium.Env, noise_std: float = 0.0) -> None:
        super().__init__(env)
        if not noise_std >= 0.0:
            raise ValueError(f"noise_std={noise_std!r} must be >= 0.")
        self.noise_std = float(noise_std)
        box = env.observation_space
        self.observation_space = gymnasium.spaces.Box(
            box.low[list(KEPT)], box.high[list(KEPT)], dtype=np.float32)

    def observation(self, obs: np.ndarray) -> np.ndarray:
        kept = np.asarray(obs, np.float32)[list(KEPT)]
        if self.noise_std:
            kept = kept + self.np_random.normal(0.0, self.noise_std, kept.shape).astype(
                np.float32)
        return kept


def make_masked_cartpole(num_envs: int, seed: int, env_config) -> adapters.GymnasiumVectorEnv:
    """The registry maker: `num_envs` masked CartPoles (env i seeded seed + i)."""
    options = dict(env_config.options)
    noise_std = float(options.pop("noise_std", 0.0))
    return adapters.gymnasium_env(
        lambda: MaskVelocities(gymnasium.make("CartPole-v1", **options), noise_std),
        num_envs, seed)


register_env(ENV_NAME, make_masked_cartpole)

__all__ = ["ENV_NAME", "MaskVelocities", "make_masked_cartpole"]
