"""Actor thread: steps its own environments, runs the policy on its actor device, and ships
finished rollouts straight to the learner devices.

This module is the thread's loop: building its envs (restarts after env faults), the half-step
cycle, and shipping. The envs it steps, one pool or two overlapping half-pools, are
sebulba/actor_pools.py; the shared jitted policy is sebulba/actor_policy.py; the rollout under
construction, its assembly and the message to the learner are sebulba/actor_rollout.py.

Overlapping, the next rollout starts as soon as half A's last step is back (newest
parameters), so the pools do not drain at rollout boundaries.

Hot loop per half-step: one jitted policy call (it also returns the observation on the device,
so there is no separate device_put), one device->host copy of the action, `send`; later `recv`
and four small numpy writes. One jitted call per rollout assembles it.

Recurrent agents (`agent.recurrent`): the thread keeps each env's core state on the device,
resets it where a new episode's first observation arrives (the step after a reset step, and
the very first step), and stores the state each rollout started from in `Rollout.core_state`.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Sequence

import jax
import numpy as np
from jax.sharding import Sharding

from sebulba.actor_policy import claim_first_call, first_call_lock, policy_fn
from sebulba.actor_pools import OVERLAP_MODES, HalfPool, build_halves, close_quietly
# RolloutMessage is also imported from here by sebulba/runner.py.
from sebulba.actor_rollout import RolloutMessage, RolloutSteps, assemble
from podracer.agent import Agent
from podracer.curriculum import TrainingProgress
from podracer.episode_metrics import EpisodeMetric
from sebulba.env_guard import CheckedEnv, EnvFault
from sebulba.envs import TimeStep
from sebulba.pipeline import Lifetime, ParamsSource, Stopped, blocking_put


class ActorThread(threading.Thread):
    """One actor: its own envs, RNG stream and (shared) jitted policy on one actor device.

    `make_env(seed)` builds the thread's whole pool; `make_env_sized(num_envs, seed)` (needed
    to overlap) builds one of any size. `overlap`: "on" steps two half-pools in turn (envs
    without their own `send`/`recv` step in a helper thread), "off" one pool, "auto" see
    `actor_pools.wants_overlap`. `num_envs` (the whole pool's size) spares a probe pool when
    overlapping. `policy`: the jitted policy step (default: `policy_fn(agent)`, shared by all
    threads). `episode_metrics`: the env.episode_metrics each finished game carries after its
    return and length. `steps_per_update`: env steps of one update over the job, the clock of
    an env that reads the training progress (a curriculum: `reads_progress` and
    `set_progress(progress)`), handed before the first reset and whenever the parameters that
    act are of another update (their version is the learner's update count).
    """

    def __init__(self, *, actor_id: int, device: jax.Device, agent: Agent,
                 make_env: Callable[[int], Any], seed: int, unroll_length: int,
                 params: ParamsSource, out_queue: queue.Queue, learner_sharding: Sharding,
                 lifetime: Lifetime, synchronous: bool = False,
                 on_step: Callable[[int, int, TimeStep], None] | None = None,
                 max_env_restarts: int = 0,
                 make_env_sized: Callable[[int, int], Any] | None = None,
                 overlap: str | bool = "auto", num_envs: int | None = None,
                 policy: Callable | None = None,
                 episode_metrics: Sequence[EpisodeMetric] = (),
                 steps_per_update: int = 0) -> None:
        super().__init__(name=f"actor-{actor_id}", daemon=True)
        if isinstance(overlap, bool):
            overlap = "on" if overlap else "off"
        if overlap not in OVERLAP_MODES:
            raise ValueError(f"overlap={overlap!r}; allowed: {', '.join(OVERLAP_MODES)} "
                             f"(or a bool).")
        if overlap == "on" and make_env_sized is None:
            raise ValueError("overlap='on' needs make_env_sized(num_envs, seed) to build the "
                             "two half-pools.")
        self.actor_id, self.device, self.agent = actor_id, device, agent
        self._make_env, self._seed, self._unroll = make_env, seed, unroll_length
        self._make_sized, self._overlap, self._num_envs = make_env_sized, overlap, num_envs
        self._params, self._queue, self._sharding = params, out_queue, learner_sharding
        self._lifetime, self._synchronous = lifetime, synchronous
        self._on_step = on_step  # test hook for fault injection: (actor_id, t, ts)
        self._max_restarts = max_env_restarts  # EnvFaults survived by rebuilding the pool
        self._policy = policy if policy is not None else policy_fn(agent)
        self._metrics = tuple(episode_metrics)
        self._steps_per_update = steps_per_update
        self._reads_progress = False  # decided when the envs are built
        # What the thread is doing since when, for the learner's stall warning (plain
        # attribute writes: cheap enough for the hot loop, and atomic under the GIL).
        self.phase, self.phase_since = "starting", time.perf_counter()
        self._env: CheckedEnv | None = None
        self._halves: list[HalfPool] = []
        self.overlapping: bool | None = None  # decided when the envs are built
        self._first_call = first_call_lock(self._policy, device)
        self._key: Any = None

    def describe(self) -> str:
        """e.g. "actor-1 in env.step (pool step 812) for 63s", for stall warnings."""
        env = self._env
        where = f" (pool step {env.steps})" if self.phase == "env.step" and env else ""
        alive = "" if self.is_alive() else " (exited)"
        return (f"{self.name} in {self.phase}{where} for "
                f"{time.perf_counter() - self.phase_since:.0f}s{alive}")

    def _set_phase(self, phase: str) -> None:
        self.phase, self.phase_since = phase, time.perf_counter()

    def run(self) -> None:
        restarts = 0
        try:
            while True:
                # A rebuilt pool gets fresh env seeds (a function of the seed and the restart).
                seed = self._seed if restarts == 0 else int(
                    np.random.SeedSequence([self._seed, restarts]).generate_state(1)[0]) >> 2
                try:
                    self._set_phase("make_env")
                    self._build_envs(seed)
                    self._loop(seed)
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
                    self._close_envs()
        except Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - any actor failure must stop the run
            self._lifetime.fail(e)
        finally:
            self._set_phase("exited")
            self._close_envs()

    def _build_envs(self, seed: int) -> None:
        """Two half-pools (overlap) or one pool; env i of the thread gets seed + i either way."""
        self._halves, self.overlapping = build_halves(
            self.name, seed, mode=self._overlap, platform=self.device.platform,
            num_envs=self._num_envs, make_env=self._make_env, make_sized=self._make_sized,
            metrics=self._metrics)
        self._env = self._halves[0].env

    def _close_envs(self) -> None:
        for h in self._halves:
            close_quietly(h.env)
        self._halves, self._env = [], None

    def _hand_progress(self, h: HalfPool, version: int) -> None:
        """The training progress at update `version` to half `h`'s envs, if they read it and
        have not got it yet (never while a step of theirs is in flight)."""
        if self._reads_progress and h.progress_version != version:
            ret, games, means = self._params.recent or (float("nan"), 0, {})
            h.env.set_progress(TrainingProgress(float(version * self._steps_per_update),
                                                int(version), ret, games, dict(means)))
            h.progress_version = version

    def _act(self, h: HalfPool, params, steps: RolloutSteps, i: int, t: int,
             version: int) -> float:
        """Policy on half `h`'s observation (acting with parameters of update `version`), then
        `send` its action; returns the seconds."""
        s = time.perf_counter()
        self.phase, self.phase_since = "inference", s
        reset = h.reset if h.core is not None else None
        action, extras, self._key, used, h.core, obs_dev = self._policy(
            params, h.obs, self._key, h.core, reset)
        if t == 0:
            steps.first_state[i] = used  # post-reset: the learner needs no reset at step 0
        steps.obs[i].append(obs_dev)
        steps.action[i].append(action)
        steps.extras[i].append(extras)
        action_host = jax.device_get(action)  # an array, or a dict/tuple (mixed)
        self._hand_progress(h, version)
        e = time.perf_counter()
        self.phase, self.phase_since = "env.step", e
        h.send(action_host)
        return e - s

    def _record(self, h: HalfPool, steps: RolloutSteps, t: int, ts: TimeStep) -> None:
        """Step t of half `h` came back: host fields, episode statistics, reset flags."""
        lo, hi = h.lo, h.hi
        valid = ~h.prev_done
        steps.valid[t, lo:hi] = valid
        steps.reward[t, lo:hi] = ts.reward
        steps.terminated[t, lo:hi] = ts.terminated
        steps.truncated[t, lo:hi] = ts.truncated
        h.counter.update(ts, valid, steps.episodes)
        h.prev_done = ts.terminated | ts.truncated
        h.reset = ~valid
        h.obs = ts.obs

    def _fetch_params(self, min_version: int):
        t0 = time.perf_counter()
        self.phase, self.phase_since = "waiting for params", t0
        params, version = self._params.get(self.device, min_version)
        return params, version, time.perf_counter() - t0

    def _loop(self, seed: int) -> None:
        halves, T = self._halves, self._unroll
        B = sum(h.n for h in halves)
        self._key = jax.device_put(jax.random.key(seed), self.device)
        self._set_phase("env.reset")
        self._reads_progress = any(getattr(h.env, "reads_progress", False) for h in halves)
        if self._reads_progress and self._steps_per_update <= 0:
            raise ValueError(f"steps_per_update={self._steps_per_update}: the env reads the "
                             f"training progress (a curriculum); give one update's env steps.")
        if self._reads_progress:
            self._params.wants_recent = True  # the learner summarises the games for them
        for h in halves:
            self._hand_progress(h, self._params.version)  # the first games' draws
            h.obs = h.env.reset()
            if self.agent.recurrent:
                h.core = jax.device_put(self.agent.initial_core_state(h.n), self.device)
        params, version, t_params = self._fetch_params(0)
        steps = RolloutSteps(T, B, len(halves))
        t_infer = 0.0
        # Compiled once per device and shape: every half's first call runs under the lock (an
        # odd pool's half-pools have two shapes), so later threads find both compiled.
        with self._first_call:
            first = claim_first_call(self._policy, self.device)
            if first and jax.process_index() == 0:  # a long compile is never a silent minute
                print(f"compiling the policy on {self.device} ...", flush=True)
            start = time.perf_counter()
            for i, h in enumerate(halves):
                t_infer += self._act(h, params, steps, i, 0, version)
            if first and jax.process_index() == 0:
                print(f"policy compiled in {time.perf_counter() - start:.1f}s", flush=True)
        t_put = 0.0  # the previous rollout's wait for queue space (the first has none)
        while not self._lifetime.stopping:
            t_env = t_next = 0.0
            nxt = None
            for t in range(T):
                for i, h in enumerate(halves):
                    e = time.perf_counter()
                    ts = h.recv()
                    t_env += time.perf_counter() - e
                    if self._on_step is not None:
                        self._on_step(self.actor_id, t, ts)
                    self._record(h, steps, t, ts)
                    if t + 1 < T:
                        t_infer += self._act(h, params, steps, i, t + 1, version)
                        continue
                    # Half A's last step is back. The next rollout starts now, with the newest
                    # parameters, so the pools never drain at a rollout boundary, unless
                    # - the actor is on-policy (`synchronous`): the parameters it needs come
                    #   from the update this rollout feeds, so it ships first, then waits;
                    # - its queue is full (the learner is behind): the put will block, and
                    #   parameters fetched after it are fresher (no extra policy lag).
                    if i == 0 and not self._synchronous and not self._queue.full():
                        nxt = RolloutSteps(T, B, len(halves))
                        p2, v2, tp2 = self._fetch_params(0)
                    if nxt is not None:
                        t_next += self._act(h, p2, nxt, i, 0, v2)
                        steps.obs[i].append(nxt.obs[i][0])  # bootstrap = next first obs
            s = time.perf_counter()
            self.phase, self.phase_since = "shipping the rollout", s
            if nxt is None:
                for i, h in enumerate(halves):
                    steps.obs[i].append(jax.device_put(h.obs, self.device))
            rollout = assemble(steps, self.device)
            # Device to device: split along the env axis onto the learner devices.
            rollout = jax.device_put(rollout, self._sharding)
            t_ship = time.perf_counter() - s
            # The message is complete before it is queued (the learner reads it at once): its
            # queue wait is known only after the put, so it rides on the next rollout.
            msg = RolloutMessage(rollout, version, T * B, steps.episodes,
                                 {"actor/params_wait_s": t_params, "actor/inference_s": t_infer,
                                  "actor/env_s": t_env, "actor/ship_s": t_ship,
                                  "actor/queue_put_s": t_put}, self.actor_id)
            self._set_phase("waiting for queue space")
            t_put = blocking_put(self._queue, msg, self._lifetime)
            if nxt is not None:
                params, version, t_params, steps, t_infer = p2, v2, tp2, nxt, t_next
                continue
            # On-policy: wait for the update this rollout feeds.
            params, version, t_params = self._fetch_params(
                version + 1 if self._synchronous else 0)
            steps = RolloutSteps(T, B, len(halves))
            t_infer = sum(self._act(h, params, steps, i, 0, version)
                          for i, h in enumerate(halves))
