"""A frozen baseline: Sebulba's actor thread without the half-pool overlap (one EnvPool batch
per thread, stepped while the policy waits), measured beside today's actor in the same run by
`python -m benchmarks.throughput --actor_impls before,current`. Not used by the runtime.
Its own description follows.

Actor thread: steps its own EnvPool batch, runs the policy on its actor device, and ships
finished rollouts straight to the learner devices.

Hot loop per step: one host->device copy of the observation EnvPool hands over, one jitted
policy call, one device->host copy of the action (the env needs it on the host; a pytree of
arrays for mixed action spaces). Device arrays
are collected in lists and stacked once per rollout by a single jitted call; small host-side
fields (rewards, done flags) go into preallocated numpy buffers.

Recurrent agents (`agent.recurrent`): the thread keeps each env's core state on the device,
resets it where a new episode's first observation arrives (the step after a reset step, and
the very first step), and stores the state each rollout started from in `Rollout.core_state`.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Sharding

from podracer.agent import Agent, Rollout, reset_core_state
from sebulba.env_guard import CheckedEnv, EnvFault
from sebulba.envs import TimeStep
from sebulba.pipeline import Lifetime, ParamsSource, Stopped, blocking_put


@dataclasses.dataclass
class RolloutMessage:
    """What an actor hands the learner: the sharded rollout plus host-side bookkeeping."""

    rollout: Rollout
    param_version: int          # version of the params that produced the rollout
    env_steps: int              # T * B agent steps in this rollout
    episodes: list[tuple[float, int]]  # (return, length) of games finished in this rollout
    timings: dict[str, float]   # seconds spent per stage in this rollout
    actor_id: int


@dataclasses.dataclass
class _EpisodeCounter:
    """True game returns and lengths, accumulated on the host per env."""

    returns: np.ndarray
    lengths: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> "_EpisodeCounter":
        return cls(np.zeros(n, np.float64), np.zeros(n, np.int64))

    def update(self, ts: TimeStep, valid: np.ndarray, out: list[tuple[float, int]]) -> None:
        self.returns += ts.reward
        self.lengths += valid
        for i in np.flatnonzero(ts.episode_over):
            out.append((float(self.returns[i]), int(self.lengths[i])))
        self.returns[ts.episode_over] = 0.0
        self.lengths[ts.episode_over] = 0


# Steps are stacked in chunks: XLA's compile time grows with the number of operands, and one
# program stacking T=2048 steps (the MuJoCo PPO setup) took minutes to compile on CPU; chunks of
# 64 compile in about a second, and the per-rollout cost stays a few dispatches.
_STACK_CHUNK = 64


@jax.jit
def _stack(xs):
    return jax.tree.map(lambda *x: jnp.stack(x), *xs)


@jax.jit
def _concat(chunks):
    return jax.tree.map(lambda *x: jnp.concatenate(x), *chunks)


def _stack_steps(xs: list) -> Any:
    """A list of per-step pytrees [B, ...] -> one pytree [len, B, ...] on the same device."""
    if len(xs) <= _STACK_CHUNK:
        return _stack(xs)
    return _concat([_stack(xs[i:i + _STACK_CHUNK]) for i in range(0, len(xs), _STACK_CHUNK)])


@jax.jit
def _add_time_axis(tree):
    return jax.tree.map(lambda x: x[None], tree)


def _stack_rollout(obs_list, action_list, extras_list, reward, terminated, truncated, valid,
                   core_state=None):
    """One Rollout on the actor device; `core_state` ([B, ...] leaves, or None) gets the
    leading time axis of 1 that lets one env-axis-1 sharding split every field."""
    if core_state is not None:
        core_state = _add_time_axis(core_state)
    return Rollout(obs=_stack_steps(obs_list), action=_stack_steps(action_list), reward=reward,
                   terminated=terminated, truncated=truncated, valid=valid,
                   extras=_stack_steps(extras_list), core_state=core_state)


class ActorThread(threading.Thread):
    """One actor: its own envs, RNG stream and jitted policy on one actor device."""

    def __init__(self, *, actor_id: int, device: jax.Device, agent: Agent,
                 make_env: Callable[[int], Any], seed: int, unroll_length: int,
                 params: ParamsSource, out_queue: queue.Queue, learner_sharding: Sharding,
                 lifetime: Lifetime, synchronous: bool = False,
                 on_step: Callable[[int, int, TimeStep], None] | None = None,
                 max_env_restarts: int = 0) -> None:
        super().__init__(name=f"actor-{actor_id}", daemon=True)
        self.actor_id, self.device, self.agent = actor_id, device, agent
        self._make_env, self._seed, self._unroll = make_env, seed, unroll_length
        self._params, self._queue, self._sharding = params, out_queue, learner_sharding
        self._lifetime, self._synchronous = lifetime, synchronous
        self._on_step = on_step  # test hook for fault injection: (actor_id, t, ts)
        self._max_restarts = max_env_restarts  # EnvFaults survived by rebuilding the pool
        self._policy = jax.jit(self._policy_step)
        # What the thread is doing since when, for the learner's stall warning (plain
        # attribute writes: cheap enough for the hot loop, and atomic under the GIL).
        self.phase, self.phase_since = "starting", time.perf_counter()
        self._env: CheckedEnv | None = None

    def describe(self) -> str:
        """e.g. "actor-1 in env.step (pool step 812) for 63s", for stall warnings."""
        env = self._env
        where = f" (pool step {env.steps})" if self.phase == "env.step" and env else ""
        alive = "" if self.is_alive() else " (exited)"
        return (f"{self.name} in {self.phase}{where} for "
                f"{time.perf_counter() - self.phase_since:.0f}s{alive}")

    def _set_phase(self, phase: str) -> None:
        self.phase, self.phase_since = phase, time.perf_counter()

    def _policy_step(self, params, obs, key, state=None, reset=None):
        """One batched policy call. Recurrent agents: resets the state of the envs whose
        episode starts here, and returns (.., state used, state after the step)."""
        key, sub = jax.random.split(key)
        if state is None:
            action, extras = self.agent.actor_step(params, obs, sub)
            return action, extras, key, None, None
        state = reset_core_state(state, reset, self.agent.initial_core_state(reset.shape[0]))
        action, extras, new_state = self.agent.actor_step(params, obs, sub, state)
        return action, extras, key, state, new_state

    def run(self) -> None:
        env, restarts = None, 0
        try:
            while True:
                # A rebuilt pool gets fresh env seeds (a function of the seed and the restart).
                seed = self._seed if restarts == 0 else int(
                    np.random.SeedSequence([self._seed, restarts]).generate_state(1)[0]) >> 2
                try:
                    self._set_phase("make_env")
                    env = self._env = CheckedEnv(self._make_env(seed), self.name)
                    self._loop(env, seed)
                    return
                except EnvFault as e:
                    if restarts >= self._max_restarts:
                        if self._max_restarts:
                            raise EnvFault(f"{e} Gave up after {restarts} env restart(s) "
                                           f"(max_env_restarts={self._max_restarts}).") from e
                        raise
                    restarts += 1
                    print(f"WARNING: {e} Rebuilding {self.name}'s envs (restart {restarts}/"
                          f"{self._max_restarts}); its partial rollout is dropped.", flush=True)
                    _close_quietly(env)
                    env = None
        except Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - any actor failure must stop the run
            self._lifetime.fail(e)
        finally:
            self._set_phase("exited")
            _close_quietly(env)

    def _loop(self, env: CheckedEnv, seed: int) -> None:
        T, B = self._unroll, env.num_envs
        key = jax.device_put(jax.random.key(seed), self.device)
        self._set_phase("env.reset")
        obs = env.reset()
        prev_done = np.zeros(B, bool)
        counter = _EpisodeCounter.zeros(B)
        recurrent = self.agent.recurrent
        state = (jax.device_put(self.agent.initial_core_state(B), self.device) if recurrent
                 else None)
        # reset[b]: env b sees a new episode's first observation at this step. The first step
        # of a pool, and the step after each reset step (valid False) of the previous one.
        reset = np.ones(B, bool)
        next_version = 0
        while not self._lifetime.stopping:
            t0 = time.perf_counter()
            self.phase, self.phase_since = "waiting for params", t0
            params, version = self._params.get(self.device, next_version)
            if self._synchronous:
                next_version = version + 1  # on-policy: wait for the update of this rollout
            t_params = time.perf_counter() - t0
            rewards = np.zeros((T, B), np.float32)
            terms, truncs, valids = (np.zeros((T, B), bool) for _ in range(3))
            obs_list, action_list, extras_list, episodes = [], [], [], []
            first_state = None
            t_infer = t_env = 0.0
            for t in range(T):
                s = time.perf_counter()
                self.phase, self.phase_since = "inference", s
                obs_dev = jax.device_put(obs, self.device)
                reset_dev = jax.device_put(reset, self.device) if recurrent else None
                action, extras, key, used, state = self._policy(params, obs_dev, key, state,
                                                                reset_dev)
                if t == 0:
                    first_state = used  # post-reset: the learner needs no reset at step 0
                action_host = jax.device_get(action)  # an array, or a dict/tuple (mixed)
                e = time.perf_counter()
                self.phase, self.phase_since = "env.step", e
                ts = env.step(action_host)
                t_env += time.perf_counter() - e
                t_infer += e - s
                if self._on_step is not None:
                    self._on_step(self.actor_id, t, ts)
                obs_list.append(obs_dev)
                action_list.append(action)
                extras_list.append(extras)
                valids[t] = ~prev_done
                rewards[t], terms[t], truncs[t] = ts.reward, ts.terminated, ts.truncated
                counter.update(ts, valids[t], episodes)
                prev_done = ts.terminated | ts.truncated
                reset = ~valids[t]
                obs = ts.obs
            s = time.perf_counter()
            self.phase, self.phase_since = "shipping the rollout", s
            obs_list.append(jax.device_put(obs, self.device))
            local = jax.device_put((rewards, terms, truncs, valids), self.device)
            rollout = _stack_rollout(obs_list, action_list, extras_list, *local, first_state)
            # Device to device: split along the env axis onto the learner devices.
            rollout = jax.device_put(rollout, self._sharding)
            t_ship = time.perf_counter() - s
            msg = RolloutMessage(rollout, version, T * B, episodes,
                                 {"actor/params_wait_s": t_params, "actor/inference_s": t_infer,
                                  "actor/env_s": t_env, "actor/ship_s": t_ship}, self.actor_id)
            self._set_phase("waiting for queue space")
            msg.timings["actor/queue_put_s"] = blocking_put(self._queue, msg, self._lifetime)


def _close_quietly(env) -> None:
    """Closes an env on the way out; a broken env may fail to close, which must not hide the
    error that ended the run."""
    if env is None:
        return
    try:
        env.close()
    except Exception as e:  # noqa: BLE001
        print(f"WARNING: closing an env failed: {e!r}", flush=True)
