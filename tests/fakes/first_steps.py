"""An env wrapper that fingerprints a pool's first rollout, for multi-host seed tests.

`FirstSteps(env, steps, pools)` hashes the pool's reset observations and the actions and
observations of its first `steps` steps (sha256), appends itself to `pools` when built, and
forwards everything else. Only pools that stepped are actor pools (`stepped`): the runtime also
builds and resets one-env probes, with the run's base seed on every process. Used by
tests/programs/sebulba_multihost.py when MULTIHOST_FIRST_ROLLOUT_STEPS is set
(tests/slow/sebulba/test_multihost_seeds.py).
"""
from __future__ import annotations

import hashlib

import jax
import numpy as np

from sebulba.env_guard import has_native_send_recv


class FirstSteps:
    """Env wrapper that hashes what a pool's first `steps` steps exchange with the actor;
    forwards everything, and offers `send`/`recv` only where the pool has them, so the actor
    takes the same (overlapped or not) path as without the wrapper."""

    def __new__(cls, env, steps, pools):
        if cls is FirstSteps and has_native_send_recv(env):
            cls = _FirstStepsAsync
        return super().__new__(cls)

    def __init__(self, env, steps: int, pools: list) -> None:
        self.env, self._steps, self._hash = env, steps, hashlib.sha256()
        self.num_envs = env.num_envs
        self._sent = self._received = 0
        pools.append(self)  # list.append is atomic: actor threads build pools at once

    @property
    def stepped(self) -> bool:
        return self._sent > 0

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def __getattr__(self, attr):
        if attr == "env":
            raise AttributeError(attr)
        return getattr(self.env, attr)

    def _add(self, tree) -> None:
        for leaf in jax.tree.leaves(tree):
            self._hash.update(np.ascontiguousarray(leaf).tobytes())

    def _action(self, action) -> None:
        if self._sent < self._steps:
            self._add(action)
        self._sent += 1

    def _obs(self, ts):
        if self._received < self._steps:
            self._add(ts.obs)
        self._received += 1
        return ts

    def reset(self):
        obs = self.env.reset()
        self._add(obs)
        return obs

    def step(self, action):
        self._action(action)
        return self._obs(self.env.step(action))

    def close(self) -> None:
        self.env.close()


class _FirstStepsAsync(FirstSteps):
    def send(self, action) -> None:
        self._action(action)
        self.env.send(action)

    def recv(self):
        return self._obs(self.env.recv())
