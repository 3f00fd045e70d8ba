"""Actor/learner alignment: what a real ActorThread puts in its rollouts, step by step.

A deterministic env whose observation is the step counter of the episode (episodes of exactly
5 steps, each env starting at a different phase so that episodes end at different times in
different envs) is driven through `sebulba.actor.ActorThread` with a trivial agent whose
action is a function of the observation, with one pool and, where the thread can overlap env
steps with inference, with two half-pools. From the rollouts taken out of the thread's queue
(its public output, whatever the thread does inside) the test checks, per env column:
- the observations follow the env's sequence, and the bootstrap observation obs[T] of a
  rollout is the first observation obs[0] of the next one (no step lost or repeated);
- the action stored at step t is the one the policy chose from obs[t];
- valid[t] is False exactly on reset steps (obs[t] is a final observation), and the reward
  there is 0; elsewhere reward[t] is what the env paid for (obs[t], action[t]);
- terminated / truncated mark the step whose next observation is the final one;
- the (return, length) of each finished game is reported with the rollout it ended in.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

from podracer.agent import Agent
from sebulba.envs import TimeStep
from sebulba.topology import make_topology
from tests.helpers import run_actor

LENGTH = 5        # steps per episode
NUM_ENVS = 4
UNROLL = 4        # T: rollouts cut episodes (5 steps + 1 reset step) at varying places
NUM_ROLLOUTS = 6
ACTION_BONUS = 0.25


def policy_action(counter):
    """The trivial agent's action: a fixed function of the observed step counter."""
    return counter.astype(np.int32) % 3


class FiveStepEnv:
    """obs[i] = (step counter c of the episode, seed + i). The step from counter c with action a pays
    c + 1 + ACTION_BONUS * a; the episode ends (terminated, or truncated when `truncate`) on
    the step that reaches c = LENGTH, whose observation is the final one. EnvPool's autoreset:
    the next step is a reset step (action ignored, reward 0) that returns counter 0.
    Env i starts its first episode at counter (seed + i) % LENGTH, so its first game is
    shorter. Env i of a pool built with `seed` is the thread's env seed + i (the seeding
    convention that lets a thread split its envs into half-pools)."""

    def __init__(self, num_envs: int, seed: int, truncate: bool) -> None:
        self.num_envs, self.truncate = num_envs, truncate
        self._ids = seed + np.arange(num_envs)
        self.observation_space = spaces.Box(0.0, 100.0, (2,), np.float32)
        self.action_space = spaces.Discrete(3)
        self._counter = np.zeros(num_envs, np.int64)
        self._needs_reset = np.zeros(num_envs, bool)

    def _obs(self) -> np.ndarray:
        return np.stack([self._counter, self._ids], axis=1).astype(np.float32)

    def reset(self) -> np.ndarray:
        self._counter = self._ids % LENGTH
        self._needs_reset[:] = False
        return self._obs()

    def step(self, action) -> TimeStep:
        action = np.asarray(action).reshape(self.num_envs)
        resetting = self._needs_reset
        self._counter = np.where(resetting, 0, self._counter + 1)
        reward = np.where(resetting, 0.0, self._counter + ACTION_BONUS * action)
        done = ~resetting & (self._counter == LENGTH)
        self._needs_reset = done
        no = np.zeros(self.num_envs, bool)
        return TimeStep(self._obs(), reward.astype(np.float32),
                        no if self.truncate else done.copy(),
                        done.copy() if self.truncate else no, done.copy())

    def close(self) -> None:
        pass


def _trivial_agent() -> Agent:
    def actor_step(params, obs, key):
        del key
        action = (obs[:, 0].astype(jnp.int32) + params["shift"]) % 3
        return action, {"logp": jnp.zeros(obs.shape[0], jnp.float32)}

    def unused(*args):
        raise AssertionError("the actor must only call actor_step")

    return Agent(init=unused, actor_params=unused, actor_step=actor_step, learn_step=unused)


SEED = 3


def _collect(truncate: bool, overlap: str):
    """Runs a real ActorThread until NUM_ROLLOUTS messages are out; returns them on the host.
    `overlap`: "off" steps one pool, "on" two half-pools in turn (sebulba/actor.py)."""
    topo = make_topology((0,), (1, 2), NUM_ENVS)
    msgs, actor = run_actor(NUM_ROLLOUTS, {"shift": jnp.zeros((), jnp.int32)},
                            agent=_trivial_agent(),
                            make_env=lambda seed: FiveStepEnv(NUM_ENVS, seed, truncate),
                            seed=SEED, unroll_length=UNROLL,
                            learner_sharding=topo.local_batch_sharded(), overlap=overlap,
                            make_env_sized=lambda n, seed: FiveStepEnv(n, seed, truncate))
    assert actor.overlapping == (overlap == "on")  # the half-pool path really ran, or did not
    return [(jax.device_get(m.rollout), m.episodes) for m in msgs]


def _expected_counters(start: int, n: int) -> np.ndarray:
    """The env's counter sequence from a first observation `start`: start..5, 0..5, ..."""
    seq, c = [], start
    for _ in range(n):
        seq.append(c)
        c = 0 if c == LENGTH else c + 1
    return np.array(seq)


def _game(start: int) -> tuple[float, int]:
    """(return, length) of a game whose first observed counter is `start`."""
    ret = sum(c + 1 + ACTION_BONUS * (c % 3) for c in range(start, LENGTH))
    return float(ret), LENGTH - start


@pytest.mark.parametrize("overlap", ["off", "on"])
@pytest.mark.parametrize("truncate", [False, True], ids=["terminating", "truncating"])
def test_rollouts_align_obs_actions_rewards_flags_and_episodes(truncate, overlap):
    msgs = _collect(truncate, overlap)
    rollouts = [r for r, _ in msgs]
    for r in rollouts:
        assert r.obs.shape == (UNROLL + 1, NUM_ENVS, 2) and r.valid.shape == (UNROLL, NUM_ENVS)
    # Bootstrap obs of rollout k == first obs of rollout k+1, in every env column.
    for k in range(NUM_ROLLOUTS - 1):
        np.testing.assert_array_equal(rollouts[k].obs[-1], rollouts[k + 1].obs[0],
                                      err_msg=f"rollout {k} -> {k + 1}")
    # One stream per column: obs[0..T-1] of every rollout, then the last bootstrap obs.
    obs = np.concatenate([r.obs[:-1] for r in rollouts] + [rollouts[-1].obs[-1:]])
    cat = lambda field: np.concatenate([getattr(r, field) for r in rollouts])
    action, reward, valid = cat("action"), cat("reward"), cat("valid")
    term, trunc = cat("terminated"), cat("truncated")
    steps = NUM_ROLLOUTS * UNROLL
    finished = 0
    for b in range(NUM_ENVS):
        counter = obs[:, b, 0]
        np.testing.assert_array_equal(obs[:, b, 1], SEED + b)  # columns are not mixed up
        start = int(counter[0])
        np.testing.assert_array_equal(counter, _expected_counters(start, steps + 1),
                                      err_msg=f"env {b}")
        now, nxt = counter[:-1], counter[1:]
        np.testing.assert_array_equal(action[:, b], policy_action(now), err_msg=f"env {b}")
        # Reset steps: the agent saw a final observation; valid False, reward 0.
        reset_step = now == LENGTH
        assert reset_step.any() and (~reset_step).any()
        np.testing.assert_array_equal(valid[:, b], ~reset_step, err_msg=f"env {b}")
        np.testing.assert_array_equal(reward[:, b][reset_step], 0.0)
        paid = nxt + ACTION_BONUS * policy_action(now)
        np.testing.assert_allclose(reward[:, b][~reset_step], paid[~reset_step])
        ends = ~reset_step & (nxt == LENGTH)
        np.testing.assert_array_equal(term[:, b], ends if not truncate else False)
        np.testing.assert_array_equal(trunc[:, b], ends if truncate else False)
        finished += int(ends.sum())
    # Episodes: reported with the rollout whose step ended them, as (true return, length).
    # The stream starts at the pools' reset, so every game is seen from its first observation
    # on (the first game of env b starts at counter (SEED + b) % LENGTH).
    for k, (r, episodes) in enumerate(msgs):
        expected = []
        for b in range(NUM_ENVS):
            for t in np.flatnonzero(r.terminated[:, b] | r.truncated[:, b]):
                g = k * UNROLL + t  # global step index of the episode's last step
                first = max(i for i in range(g + 1) if i == 0 or obs[i - 1, b, 0] == LENGTH)
                expected.append(_game(int(obs[first, b, 0])))
        assert sorted(episodes) == sorted(expected), (k, episodes, expected)
    assert sum(len(e) for _, e in msgs) == finished > NUM_ENVS
    assert (15.0 + ACTION_BONUS * 4, LENGTH) in [e for _, es in msgs for e in es]
