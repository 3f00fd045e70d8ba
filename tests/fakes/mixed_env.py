"""A small batched NumPy env with a mixed action space, for end-to-end tests.

EnvPool has no task with mixed actions, so this one implements the runtime's env API
(sebulba/envs.py): `reset() -> obs`, `step(action) -> TimeStep` with EnvPool's one-step-late
autoreset, `num_envs`, `observation_space`, `action_space`, `close()`.

The task ("steer and shift"): each step shows a target steering angle x in [-1, 1] and a
target gear k in {0, 1, 2} (one-hot); the action is {"steer": Box(-1, 1, (1,)),
"gear": Discrete(3)} and the reward is (1 - |steer - x|) + [gear == k], at most 2 per step.
Episodes are cut after `length` steps (truncation). A uniformly random policy earns about
0.55 per step (~9 per 16-step episode); getting only one of the two parts right is worth at
most ~21, so a return above ~24 needs both the continuous and the discrete sub-action.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces

from sebulba.envs import TimeStep


class SteerAndShiftEnv:
    def __init__(self, num_envs: int, seed: int, length: int = 16) -> None:
        self.num_envs, self.length = num_envs, length
        self._rng = np.random.default_rng(seed)
        self.observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
        self.action_space = spaces.Dict({"steer": spaces.Box(-1.0, 1.0, (1,), np.float32),
                                         "gear": spaces.Discrete(3)})
        self._t = np.zeros(num_envs, np.int64)
        self._x = np.zeros(num_envs, np.float32)
        self._k = np.zeros(num_envs, np.int64)
        self._needs_reset = np.zeros(num_envs, bool)

    def _new_targets(self, idx: np.ndarray) -> None:
        self._x[idx] = self._rng.uniform(-1.0, 1.0, idx.size).astype(np.float32)
        self._k[idx] = self._rng.integers(0, 3, idx.size)

    def _obs(self) -> np.ndarray:
        obs = np.zeros((self.num_envs, 4), np.float32)
        obs[:, 0] = self._x
        obs[np.arange(self.num_envs), 1 + self._k] = 1.0
        return obs

    def reset(self) -> np.ndarray:
        self._t[:] = 0
        self._needs_reset[:] = False
        self._new_targets(np.arange(self.num_envs))
        return self._obs()

    def step(self, action) -> TimeStep:
        steer = np.asarray(action["steer"], np.float32).reshape(self.num_envs)
        gear = np.asarray(action["gear"]).reshape(self.num_envs)
        if steer.min() < -1.0 or steer.max() > 1.0:
            raise ValueError(f"steer out of bounds: {steer.min()}..{steer.max()}")
        reward = (1.0 - np.abs(steer - self._x)) + (gear == self._k)
        # EnvPool's autoreset: an env whose episode ended on the previous step resets now,
        # ignores its action and reports reward 0.
        resetting = self._needs_reset.copy()
        reward[resetting] = 0.0
        self._t[resetting] = 0
        self._t[~resetting] += 1
        truncated = self._t >= self.length
        self._needs_reset = truncated.copy()
        self._new_targets(np.arange(self.num_envs))
        terminated = np.zeros(self.num_envs, bool)
        return TimeStep(self._obs(), reward.astype(np.float32), terminated, truncated,
                        truncated.copy())

    def close(self) -> None:
        pass
