"""A JAX-native env whose step info reports a crash flag and the reward's terms, registered as
"ScoredDash-test-v0" (anakin.envs.register_env), for the Anakin episode-metrics tests.

One env: a dash of at most `limit` steps (then truncated). Action 1 runs (+1 progress), action
0 walks (+0.25); every step costs 0.1. Running crashes with probability `risk` per step (the
game then ends, terminated, with a -1 crash term). info = {"crashed": 0/1, "speed": the step's
progress, "rewards": {"progress", "cost", "crash"}}: the terms sum to the step's reward.
Observations: float32 [2] = (t / limit, 1).
"""
from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from anakin import envs

NAME = "ScoredDash-test-v0"


class ScoredDash:
    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, limit: int = 12, risk: float = 0.1) -> None:
        self.limit, self.risk = limit, risk

    def _obs(self, t):
        return jnp.stack([t / self.limit, 1.0]).astype(jnp.float32)

    def reset(self, key):
        t = jnp.zeros((), jnp.int32)
        return t, self._obs(t)

    def transition(self, key, t, action):
        run = action == 1
        crashed = jnp.logical_and(run, jax.random.uniform(key) < self.risk)
        terms = {"progress": jnp.where(run, 1.0, 0.25), "cost": jnp.float32(-0.1),
                 "crash": jnp.where(crashed, -1.0, 0.0)}
        reward = terms["progress"] + terms["cost"] + terms["crash"]
        t = t + 1
        info = {"crashed": crashed.astype(jnp.float32), "speed": terms["progress"],
                "rewards": terms}
        return t, self._obs(t), reward, crashed, t >= self.limit, info


envs.register_env(NAME, lambda options: ScoredDash(**options))
