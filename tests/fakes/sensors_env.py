"""A JAX-native env whose observation is a dict of an image and a vector, and whose task needs
both: for the multi-sensor torso's tests (tests/networks/test_encoders.py,
tests/slow/networks/test_encoders_learning.py).

Each step shows `{"camera": float32 [8, 8, 1], "sensors": float32 [3]}`: the camera has one lit
pixel in its left or right half (bit a), the sensor vector's first entry is +1 or -1 (bit b),
the others noise. The action (Discrete(4)) scores 1 when it equals 2a + b, else 0; a game is 8
steps (truncation). Random play earns 2 per game; either sensor alone tells one bit, so at most
4 per game (the other bit guessed); 8 needs both. `hide` ("camera" or "sensors") blanks one of
them, to show that. `gear`: also shows bit b as a `Discrete(3, start=1)` leaf `gear`
(values 1, 2), for the Discrete-leaf embedding.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces

from anakin import envs

LENGTH = 8
NAME = "SensorsTest-v0"


class SensorsEnv:
    """A RawEnv (anakin/envs.py): reset / transition without auto-reset."""

    def __init__(self, hide: str = "", gear: bool = False) -> None:
        if hide not in ("", "camera", "sensors"):
            raise ValueError(f"hide={hide!r}; allowed: '', 'camera', 'sensors'.")
        self.hide, self.gear = hide, gear
        self.observation_space = spaces.Dict({
            "camera": spaces.Box(0.0, 1.0, (8, 8, 1), np.float32),
            "sensors": spaces.Box(-3.0, 3.0, (3,), np.float32),
            **({"gear": spaces.Discrete(3, start=1)} if gear else {})})
        self.action_space = spaces.Discrete(4)

    def _observe(self, key):
        k_a, k_b, k_row, k_col, k_noise = jax.random.split(key, 5)
        a = jax.random.bernoulli(k_a).astype(jnp.int32)
        b = jax.random.bernoulli(k_b).astype(jnp.int32)
        row = jax.random.randint(k_row, (), 0, 8)
        col = jax.random.randint(k_col, (), 0, 4) + 4 * a
        camera = jnp.zeros((8, 8, 1), jnp.float32).at[row, col, 0].set(1.0)
        sensors = jnp.concatenate([jnp.where(b == 1, 1.0, -1.0)[None],
                                   jax.random.normal(k_noise, (2,))]).astype(jnp.float32)
        if self.hide == "camera":
            camera = jnp.zeros_like(camera)
        if self.hide == "sensors":
            sensors = jnp.zeros_like(sensors)
        obs = {"camera": camera, "sensors": sensors}
        if self.gear:  # b again, as a Discrete(3, start=1) value (1 or 2)
            obs["gear"] = (1 + b).astype(jnp.int32)
        return obs, 2 * a + b

    def reset(self, key):
        obs, target = self._observe(key)
        return (jnp.int32(0), target), obs

    def transition(self, key, state, action):
        t, target = state
        reward = (action == target).astype(jnp.float32)
        obs, target = self._observe(key)
        t = t + 1
        return (t, target), obs, reward, jnp.bool_(False), t >= LENGTH


def make(options: dict) -> SensorsEnv:
    return SensorsEnv(**options)


def train_run(run_dir, hide: str = "", gear: bool = False, **overrides):
    """Trains ppo_gymnax's config on SensorsTest-v0 in `run_dir`/run{hide} (quietly, no
    checkpoints) with `env.options` hide and gear and the given config overrides; the result."""
    from experiments import train
    from experiments.configs import ppo_gymnax
    from tests.helpers import quiet_config
    register()
    config = quiet_config(ppo_gymnax.get_config(), run_dir / f"run{hide}", **{
        "env.name": NAME, "checkpoint_keep": 0, **overrides})
    config.env.options = {"hide": hide, "gear": gear}
    return train.run(config)


def register() -> None:
    """Registers SensorsTest-v0 (env.options: `hide`) for Anakin (and Sebulba's host route);
    again is no clash (the same factory)."""
    envs.register_env(NAME, make)
