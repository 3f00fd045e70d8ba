"""A cue-recall memory task, registered as "CueRecall-test-v0" through sebulba's registry and
Gymnasium adapter, for the recurrent-agent tests (docs/recurrent.md).

An episode: the first observation shows a cue (one of two, one-hot); then `delay` blank
observations; then a query observation. The action taken on the query step earns 1 if it
names the cue, else 0, and ends the episode (terminated). Other steps earn 0 whatever the
action. Observations: float32 [3] = (cue 0, cue 1, query flag).

Only memory solves it: at the query step the observation carries nothing about the cue, so
any feed-forward policy earns 0.5 per episode on average, and an agent that remembers the
cue earns 1.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from sebulba import adapters, registry

NAME = "CueRecall-test-v0"


class CueRecall(gym.Env):
    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, delay: int = 2) -> None:
        self.delay, self.t, self.cue = delay, 0, 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(3, np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        elif self.t == self.delay + 1:
            obs[2] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.cue = 0, int(self.np_random.integers(2))
        return self._obs(), {}

    def step(self, action):
        query = self.t == self.delay + 1
        reward = float(query and int(action) == self.cue)
        self.t += 1
        return self._obs(), reward, query, False, {}


def make_cue_recall(num_envs: int, seed: int, env_config) -> adapters.GymnasiumVectorEnv:
    return adapters.gymnasium_env(lambda: CueRecall(**env_config.options), num_envs, seed)


registry.register_env(NAME, make_cue_recall)
