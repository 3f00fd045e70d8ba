"""anakin/envs.py: EnvPool's one-step-late auto-reset on JAX-native envs.

A tiny deterministic env pins the convention step by step (final observation kept, then a
reset step: action ignored, reward 0, valid False, the new episode's first observation);
gymnax CartPole pins terminated vs truncated (its time limit) through the real adapter.
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

from anakin import envs


class _Counter(NamedTuple):
    t: jax.Array        # steps into the episode
    episode: jax.Array  # episodes started so far


class CountingEnv:
    """obs = 100 * episode + t; reward = action + 1; terminates when action == 2, is
    truncated at t == 3. Deterministic: the keys are unused."""

    observation_space = spaces.Box(-1e9, 1e9, (), np.float32)
    action_space = spaces.Discrete(3)

    def reset(self, key):
        del key
        return _Counter(jnp.int32(0), jnp.int32(0)), jnp.float32(0)

    def transition(self, key, s, action):
        t = s.t + 1
        obs = (100 * s.episode + t).astype(jnp.float32)
        return (_Counter(t, s.episode), obs, (action + 1).astype(jnp.float32), action == 2,
                t >= 3)


def test_one_step_late_reset_on_termination_and_truncation():
    env = envs.AutoReset(CountingEnv())
    state = env.reset(jax.random.key(0))
    assert float(state.obs) == 0.0 and not bool(state.done)
    # Episode 1: actions 0, 2 -> terminated at t=2. Then a reset step (action 1 ignored).
    # Episode 2: actions 0, 0, 0 -> truncated at t=3. Then a reset step.
    rows = []
    for a in [0, 2, 1, 0, 0, 0, 2, 0]:
        state, s = env.step(jax.random.key(1), state, jnp.int32(a))
        rows.append((float(s.obs), float(s.reward), bool(s.terminated), bool(s.truncated),
                     bool(s.valid)))
    assert rows == [
        (1.0, 1.0, False, False, True),
        (2.0, 3.0, True, False, True),    # the terminal step: the real final obs (t=2)
        (0.0, 0.0, False, False, False),  # reset step: action ignored, reward 0, first obs
        (1.0, 1.0, False, False, True),
        (2.0, 1.0, False, False, True),
        (3.0, 1.0, False, True, True),    # time limit: truncated, final obs kept (t=3)
        (0.0, 0.0, False, False, False),  # reset step again (action 2 would have terminated)
        (1.0, 1.0, False, False, True),
    ]


def test_gymnax_cartpole_truncation_and_termination():
    env = envs.make_env("gymnax:CartPole-v1", {"max_steps_in_episode": 5})
    raw = env.raw
    state = env.reset(jax.random.key(3))
    step = jax.jit(env.step)
    # Alternate pushes keep the pole up: 5 steps reach the time limit.
    for t in range(5):
        before = state
        state, s = step(jax.random.key(10 + t), state, jnp.int32(t % 2))
        assert bool(s.valid) and float(s.reward) == 1.0
        # The observation is the env's own transition (never a reset's) on every real step.
        _, expect, *_ = raw.transition(jax.random.key(0), before.inner, jnp.int32(t % 2))
        np.testing.assert_allclose(s.obs, expect, rtol=1e-6)
    assert bool(s.truncated) and not bool(s.terminated)
    final = np.asarray(s.obs)
    state, s = step(jax.random.key(20), state, jnp.int32(1))
    assert not bool(s.valid) and float(s.reward) == 0.0
    assert not bool(s.terminated) and not bool(s.truncated)
    assert np.all(np.abs(np.asarray(s.obs)) <= 0.05)  # a fresh CartPole start, not `final`
    assert not np.allclose(s.obs, final)
    # Always pushing right tips the pole over well before the default 500-step limit.
    env = envs.make_env("CartPole-v1")
    state = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    for t in range(200):
        state, s = step(jax.random.key(t), state, jnp.int32(1))
        if bool(s.terminated):
            break
    assert bool(s.terminated) and not bool(s.truncated) and 5 < t < 100
    assert float(s.reward) == 1.0  # EnvPool's CartPole pays the terminal step too


def test_unknown_env_names_the_allowed_ones():
    with pytest.raises(ValueError, match="gymnax:<id>.*CartPole-v1"):
        envs.make_env("gymnax:NoSuchEnv-v0")
    with pytest.raises(ValueError, match="unknown EnvParams field.*max_steps_in_episode"):
        envs.make_env("gymnax:CartPole-v1", {"max_step": 5})


def test_registered_env():
    envs.register_env("counting-test", lambda options: CountingEnv())
    env = envs.make_env("counting-test")
    assert isinstance(env.raw, CountingEnv)


def test_host_env_batches_the_jax_env_with_numpy_io():
    """sebulba/jax_host_env.py: the sebulba/envs.py API over the JAX env (used by evaluation)."""
    from sebulba.jax_host_env import HostEnv
    env = HostEnv(envs.make_env("gymnax:CartPole-v1", {"max_steps_in_episode": 5}), 3, seed=0)
    obs = env.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (3, 4)
    assert len({tuple(o) for o in obs}) == 3  # each env its own stream
    for t in range(5):
        ts = env.step(np.array([t % 2] * 3, np.int32))
        assert ts.reward.tolist() == [1.0] * 3
    assert ts.truncated.all() and ts.episode_over.all() and not ts.terminated.any()
    ts = env.step(np.zeros(3, np.int32))  # the reset step
    assert ts.reward.tolist() == [0.0] * 3 and not ts.episode_over.any()
