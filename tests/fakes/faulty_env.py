"""Fault injection for runtime tests: an env wrapper that misbehaves on cue.

`faulty(kind, at_step, env_index, pools)` returns a `wrap_env` for `experiments.wiring.run`:
the first `pools` env pools that actually step (the runtime's one-env probe only resets)
misbehave at their step `at_step` in env `env_index`; later pools (e.g. rebuilt after a
restart) behave.
"""
from __future__ import annotations

import threading

import numpy as np

from sebulba.envs import TimeStep

KINDS = ("raise", "nan_obs", "wrong_shape", "huge_reward", "block")
_LOCK = threading.Lock()  # pools of several actor threads take their numbers concurrently


class FaultyEnv:
    def __init__(self, env, kind: str, at_step: int, env_index: int, pool_ids: list) -> None:
        assert kind in KINDS, kind
        self.env, self.kind, self.at_step, self.env_index = env, kind, at_step, env_index
        self.num_envs = env.num_envs
        self.action_space, self.observation_space = env.action_space, env.observation_space
        self._pool_ids = pool_ids  # shared: [next pool number, number of faulty pools]
        self._faulty: bool | None = None
        self._steps = 0

    def reset(self):
        return self.env.reset()

    def step(self, action) -> TimeStep:
        if self._faulty is None:  # decided on the first step: the probe never steps
            with _LOCK:
                self._faulty = self._pool_ids[0] < self._pool_ids[1]
                self._pool_ids[0] += 1
        ts = self.env.step(action)
        self._steps += 1
        if not self._faulty or self._steps != self.at_step:
            return ts
        i = self.env_index
        if self.kind == "raise":
            raise RuntimeError("injected env failure")
        if self.kind == "nan_obs":
            obs = ts.obs.copy()
            obs[i, 1] = np.nan
            return ts._replace(obs=obs)
        if self.kind == "wrong_shape":
            return ts._replace(obs=np.concatenate([ts.obs, ts.obs[:, :1]], axis=1))
        if self.kind == "huge_reward":  # finite, but overflows the value loss to inf
            reward = ts.reward.copy()
            reward[i] = 1e38
            return ts._replace(reward=reward)
        threading.Event().wait()  # "block": an env that never returns
        return ts

    def close(self) -> None:
        self.env.close()


def faulty(kind: str, at_step: int, env_index: int = 0, pools: int = 1000):
    pool_ids = [0, pools]
    return lambda env: FaultyEnv(env, kind, at_step, env_index, pool_ids)
