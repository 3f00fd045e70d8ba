"""A deterministic env batch for the actor tests (tests/sebulba/test_actor_overlap.py,
test_actor_messages.py), with the runtime's one-step-late autoreset, an optional step time
that releases the GIL, and the step intervals recorded."""
from __future__ import annotations

import threading
import time

import numpy as np
from gymnasium import spaces

from sebulba.envs import TimeStep


class ClockEnv:
    """Deterministic envs with the runtime's one-step-late autoreset. Env i (id = seed + i)
    plays episodes of 2 + (id + k) % 5 steps (k = episode index) that end terminated or
    truncated by parity; obs = [id, t, k, last action]; reward = action + 0.1 t."""

    def __init__(self, num_envs: int, seed: int, step_s: float = 0.0,
                 lock: threading.Lock | None = None, spans: list | None = None) -> None:
        self.num_envs, self._spans = num_envs, spans
        self.ids = seed + np.arange(num_envs)
        self.observation_space = spaces.Box(-1e9, 1e9, (4,), np.float32)
        self.action_space = spaces.Discrete(3)
        self._step_s, self._lock = step_s, lock or threading.Lock()
        self.t = np.zeros(num_envs, np.int64)
        self.k = np.zeros(num_envs, np.int64)
        self.resetting = np.zeros(num_envs, bool)
        self.last = np.zeros(num_envs, np.int64)

    def _obs(self):
        return np.stack([self.ids, self.t, self.k, self.last], 1).astype(np.float32)

    def reset(self):
        self.t[:], self.k[:], self.resetting[:], self.last[:] = 0, 0, False, 0
        return self._obs()

    def step(self, action) -> TimeStep:
        if self._step_s:
            with self._lock:  # one "env core": the half-pools' steps cannot run together
                start = time.perf_counter()
                time.sleep(self._step_s)
                if self._spans is not None:
                    self._spans.append((start, time.perf_counter()))
        action = np.asarray(action).astype(np.int64)
        reward = np.zeros(self.num_envs, np.float32)
        term, trunc = np.zeros(self.num_envs, bool), np.zeros(self.num_envs, bool)
        r = self.resetting
        self.t[r], self.k[r], self.last[r] = 0, self.k[r] + 1, 0
        go = ~r
        self.t[go] += 1
        self.last[go] = action[go]
        reward[go] = action[go] + 0.1 * self.t[go]
        end = go & (self.t >= 2 + (self.ids + self.k) % 5)
        odd = (self.ids + self.k) % 2 == 1
        term[end & ~odd], trunc[end & odd] = True, True
        self.resetting = term | trunc
        return TimeStep(self._obs(), reward, term, trunc, term | trunc)

    def close(self) -> None:
        pass
