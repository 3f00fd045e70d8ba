"""A Python (gymnasium) env registered as "Rover-test-v0", for the worker-process tests
(tests/sebulba/test_env_workers.py): the workers import this module by name, as they import a
user's module.

Rover: a dict observation (float64 position, uint8 frame), Discrete(3) actions, random
rewards, episodes that end by a crash (terminated, `info["crashed"]`; `info["impact"]` on that
step only, as gymnasium vector envs report a key some envs lack) or by a time limit
(truncated), and a per-step `info["speed"]`. Env i's randomness comes from its own seed,
seed + i. Options: `raise_at` (raise in step number k of an env), `exit_at` (the process exits
in step k: a worker that dies), `step_ms` (a busy CPU loop per step: a costly simulator).
Its `grip` scales the speed: env.randomize varies it (the maker wraps each Rover in
sebulba.host_scenarios.randomized and declares it in `scenario_fields`, as a user's would).
"""
from __future__ import annotations

import dataclasses
import os
import time

import gymnasium as gym
import numpy as np

from sebulba import adapters, host_scenarios, registry

ENV_NAME = "Rover-test-v0"


class Rover(gym.Env):
    observation_space = gym.spaces.Dict({
        "position": gym.spaces.Box(-np.inf, np.inf, (3,), np.float64),
        "frame": gym.spaces.Box(0, 255, (4, 4), np.uint8)})
    action_space = gym.spaces.Discrete(3)

    def __init__(self, raise_at: int = 0, exit_at: int = 0, step_ms: float = 0.0) -> None:
        self.raise_at, self.exit_at, self.step_ms = raise_at, exit_at, step_ms
        self.steps = 0
        self.position = np.zeros(3)
        self.grip = 1.0

    def _obs(self):
        return {"position": self.position.copy(),
                "frame": self.np_random.integers(0, 256, (4, 4), dtype=np.uint8)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = self.np_random.normal(size=3)
        return self._obs(), {}

    def step(self, action):
        self.steps += 1
        if self.raise_at and self.steps == self.raise_at:
            raise RuntimeError(f"rover lost its wheels at step {self.steps}")
        if self.exit_at and self.steps == self.exit_at:
            os._exit(3)
        if self.step_ms:
            end = time.perf_counter() + self.step_ms / 1e3
            while time.perf_counter() < end:  # holds the GIL, as a Python simulator does
                pass
        speed = (float(action) * 0.5 + self.np_random.random()) * self.grip
        self.position += speed * self.np_random.normal(size=3) * 0.1
        crashed = bool(self.np_random.random() < 0.08)
        info = {"speed": speed, "crashed": crashed}
        if crashed:  # a key only some envs report (gymnasium's "_impact" mask says which)
            info["impact"] = speed
        return self._obs(), float(self.np_random.normal()), crashed, False, info


def make_rover(num_envs: int, seed: int, env_config) -> adapters.GymnasiumVectorEnv:
    options = dict(env_config.options or {})
    limit = options.pop("max_episode_steps", 12)
    randomize = env_config.randomize

    def make_one():
        env = gym.wrappers.TimeLimit(Rover(**options), limit)
        return host_scenarios.randomized(env, randomize) if randomize else env

    env = adapters.gymnasium_env(make_one, num_envs, seed)
    env.info_fields = ("speed", "crashed", "impact")  # "impact": declared, not probed
    if randomize:
        env.info_fields += ("scenario.grip",)
        env.scenario_fields = ("grip",)
    return env


def make_rover_fixed(num_envs: int, seed: int, env_config) -> adapters.GymnasiumVectorEnv:
    """Rover from a maker that does not declare scenario_fields (refused by env.randomize)."""
    return make_rover(num_envs, seed, dataclasses.replace(env_config, randomize=""))


registry.register_env(ENV_NAME, make_rover, overwrite=True)
