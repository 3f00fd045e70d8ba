"""Actor thread: steps its own environments, runs the policy on its actor device, and ships
finished rollouts straight to the learner devices.

Overlap (`overlap`, RuntimeConfig.actor_overlap): the thread's `num_envs` envs are two
half-pools A and B (envs [0, n_A) and [n_A, num_envs) of the rollout's env axis, seeded as the
one pool would be: env i gets seed + i). The policy runs on A's observations while B's step
runs in the env's own threads (EnvPool's C++ workers, `send`/`recv`; envs with only `step` get
a helper thread from sebulba/env_guard.py), then the other way round, so a step costs about
max(env, inference) instead of their sum. Each half-pool is stepped in lockstep with
batch_size == num_envs (EnvPool's `recv` then returns every env of the half in env-id order),
so no env comes back out of order and the rollout keeps its exact [T, B] layout. The next
rollout starts as soon as half A's last step is back (newest parameters), so the pools do not
drain at rollout boundaries. Without overlap, one pool is stepped and the policy waits for it.
"auto" overlaps only where it was measured to pay (`wants_overlap`, docs/benchmarks.md).

Hot loop per half-step: one jitted policy call (the observation goes in as the host array, the
policy returns it on the device for the rollout, so there is no separate device_put; the reset
flags of recurrent agents likewise), one device->host copy of the action, `send`; later `recv`
and four small numpy writes. One jitted call per rollout stacks the device arrays and copies
the host fields in; the bootstrap observation of a rollout is the next rollout's first
observation, already on the device.

Recurrent agents (`agent.recurrent`): the thread keeps each env's core state on the device,
resets it where a new episode's first observation arrives (the step after a reset step, and
the very first step), and stores the state each rollout started from in `Rollout.core_state`.

The jitted policy step is shared by all actor threads of an agent (`policy_fn`): threads on
the same device compile it once, not once each.
"""
from __future__ import annotations

import dataclasses
import functools
import queue
import threading
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Sharding

from sebulba.agent import Agent, Rollout, reset_core_state
from sebulba.env_guard import CheckedEnv, EnvFault, has_native_send_recv
from sebulba.envs import TimeStep
from sebulba.pipeline import Lifetime, ParamsSource, Stopped, blocking_put

OVERLAP_MODES = ("auto", "on", "off")


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
        over = ts.episode_over
        if over.any():  # rare: the common step skips the index search
            for i in np.flatnonzero(over):
                out.append((float(self.returns[i]), int(self.lengths[i])))
            self.returns[over] = 0.0
            self.lengths[over] = 0


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


@jax.jit
def _concat_envs(parts):
    """Half-pools' [T, n_h, ...] pytrees -> one [T, B, ...] (A's envs first)."""
    return jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *parts)


@jax.jit
def _first_state(parts):
    """Half-pools' [n_h, ...] core states -> [1, B, ...]: the leading time axis of 1 lets one
    env-axis-1 sharding split every field of the rollout."""
    return jax.tree.map(lambda *x: jnp.concatenate(x)[None], *parts)


def _stack_steps(xs: list) -> Any:
    """A list of per-step pytrees [B, ...] -> one pytree [len, B, ...] on the same device."""
    if len(xs) <= _STACK_CHUNK:
        return _stack(xs)
    return _concat([_stack(xs[i:i + _STACK_CHUNK]) for i in range(0, len(xs), _STACK_CHUNK)])


def _stack_halves(per_half: list[list]) -> Any:
    parts = [_stack_steps(xs) for xs in per_half]
    return parts[0] if len(parts) == 1 else _concat_envs(parts)


@jax.jit
def _assemble_rollout(obs, action, extras, host, first_state) -> Rollout:
    """The whole Rollout in one program (T + 1 <= _STACK_CHUNK): per-half lists of per-step
    device arrays are stacked and the halves joined on the env axis; the host fields
    ([T, B] numpy, passed as arguments) are copied in by the same call."""

    def join(per_half):
        parts = [jax.tree.map(lambda *x: jnp.stack(x), *xs) for xs in per_half]
        return jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *parts)

    core = None
    if first_state is not None:
        core = jax.tree.map(lambda *x: jnp.concatenate(x)[None], *first_state)
    reward, terminated, truncated, valid = host
    return Rollout(obs=join(obs), action=join(action), reward=reward, terminated=terminated,
                   truncated=truncated, valid=valid, extras=join(extras), core_state=core)


def _policy_step(agent: Agent, params, obs, key, state=None, reset=None):
    """One batched policy call. Returns (action, extras, key, state used, state after the
    step, obs): `obs` arrives as a host array and goes back as the device copy the rollout
    keeps. Recurrent agents: resets the state of the envs whose episode starts here."""
    key, sub = jax.random.split(key)
    if state is None:
        action, extras = agent.actor_step(params, obs, sub)
        return action, extras, key, None, None, obs
    state = reset_core_state(state, reset, agent.initial_core_state(reset.shape[0]))
    action, extras, new_state = agent.actor_step(params, obs, sub, state)
    return action, extras, key, state, new_state, obs


@functools.lru_cache(maxsize=64)
def policy_fn(agent: Agent) -> Callable:
    """The jitted policy step of `agent`, one per agent for the whole process: every actor
    thread of a run calls the same function, so jax compiles it once per device and shape
    (each thread wrapping its own bound method compiled the same policy again)."""
    return jax.jit(functools.partial(_policy_step, agent))


# Threads on one device that call the policy for the first time at once would each compile
# it (jax's compilation cache does not make concurrent misses wait): the first call of a
# (policy, device) pair runs under this lock, the others then find it compiled.
_FIRST_CALL: dict[tuple, threading.Lock] = {}
_FIRST_CALL_LOCK = threading.Lock()


def _first_call_lock(policy: Callable, device: jax.Device) -> threading.Lock:
    with _FIRST_CALL_LOCK:
        return _FIRST_CALL.setdefault((id(policy), device.id), threading.Lock())


_CALLED: set[tuple] = set()


def _claim_first_call(policy: Callable, device: jax.Device) -> bool:
    """True for the one thread that calls `policy` on `device` first (it compiles it)."""
    with _FIRST_CALL_LOCK:
        key = (id(policy), device.id)
        first = key not in _CALLED
        _CALLED.add(key)
        return first


def wants_overlap(mode: str, env: Any, platform: str) -> bool:
    """Whether an actor steps two half-pools in turn. "on"/"off" say so; "auto" overlaps an
    env that steps in its own threads (EnvPool: native send/recv) when the policy runs on an
    accelerator. On a CPU actor device the policy either is a latency-bound call (a small MLP:
    two half-batch calls per step cost more than the env step they hide; CartPole 2 x 32 envs
    ran at 37-47k steps/s overlapped against 66-72k with one pool) or computes on the very
    cores the env threads need, so there is nothing idle to overlap with (docs/benchmarks.md).
    """
    if mode != "auto":
        return mode == "on"
    return platform != "cpu" and has_native_send_recv(env)


class _Half:
    """One part of a thread's envs (the whole pool when not overlapping) and its per-env
    state: the latest observation, reset flags, LSTM core state and episode counters."""

    def __init__(self, env: CheckedEnv, lo: int, overlap: bool) -> None:
        self.env, self.n, self.lo = env, env.num_envs, lo
        self.hi = lo + self.n
        self.overlap = overlap  # send/recv (steps in the background) rather than step
        self.obs: Any = None
        self.prev_done = np.zeros(self.n, bool)
        # reset[b]: env b sees a new episode's first observation at this step. The first step
        # of a pool, and the step after each reset step (valid False) of the previous one.
        self.reset = np.ones(self.n, bool)
        self.core: Any = None
        self.counter = _EpisodeCounter.zeros(self.n)
        self._action: Any = None

    def send(self, action: Any) -> None:
        if self.overlap:
            self.env.send(action)
        else:
            self._action = action

    def recv(self) -> TimeStep:
        return self.env.recv() if self.overlap else self.env.step(self._action)


class _Steps:
    """One rollout under construction: device lists per half, host arrays [T, B]."""

    def __init__(self, T: int, B: int, halves: int) -> None:
        self.obs: list[list] = [[] for _ in range(halves)]
        self.action: list[list] = [[] for _ in range(halves)]
        self.extras: list[list] = [[] for _ in range(halves)]
        self.first_state: list = [None] * halves
        self.reward = np.zeros((T, B), np.float32)
        self.terminated, self.truncated, self.valid = (np.zeros((T, B), bool) for _ in range(3))
        self.episodes: list[tuple[float, int]] = []


class ActorThread(threading.Thread):
    """One actor: its own envs, RNG stream and (shared) jitted policy on one actor device.

    `make_env(seed)` builds the thread's whole pool; `make_env_sized(num_envs, seed)` (needed
    to overlap) builds one of any size. `overlap`: "on" steps two half-pools in turn (envs
    without their own `send`/`recv` step in a helper thread), "off" one pool, "auto" see
    `wants_overlap`. `num_envs` (the whole pool's size) spares a probe pool when overlapping.
    `policy`: the jitted policy step (default: `policy_fn(agent)`, shared by all threads).
    """

    def __init__(self, *, actor_id: int, device: jax.Device, agent: Agent,
                 make_env: Callable[[int], Any], seed: int, unroll_length: int,
                 params: ParamsSource, out_queue: queue.Queue, learner_sharding: Sharding,
                 lifetime: Lifetime, synchronous: bool = False,
                 on_step: Callable[[int, int, TimeStep], None] | None = None,
                 max_env_restarts: int = 0,
                 make_env_sized: Callable[[int, int], Any] | None = None,
                 overlap: str | bool = "auto", num_envs: int | None = None,
                 policy: Callable | None = None) -> None:
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
        # What the thread is doing since when, for the learner's stall warning (plain
        # attribute writes: cheap enough for the hot loop, and atomic under the GIL).
        self.phase, self.phase_since = "starting", time.perf_counter()
        self._env: CheckedEnv | None = None
        self._halves: list[_Half] = []
        self.overlapping: bool | None = None  # decided when the envs are built
        self._first_call = _first_call_lock(self._policy, device)
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
        self._halves, n, full = [], self._num_envs, None
        mode, platform = self._overlap, self.device.platform
        if mode != "off" and self._make_sized is not None and (mode == "on" or platform != "cpu"):
            if n is None:  # not told: the whole pool says how many envs a thread has
                full = self._make_env(seed)
                n = full.num_envs
                if n >= 2 and wants_overlap(mode, full, platform):
                    _close_quietly(full)
                    full = None
            if full is None and n >= 2:
                n_a = (n + 1) // 2
                first = self._make_sized(n_a, seed)
                if wants_overlap(mode, first, platform):
                    second = self._make_sized(n - n_a, seed + n_a)  # envs n_A.. keep their seeds
                    self._halves = [_Half(CheckedEnv(first, f"{self.name}[A]"), 0, True),
                                    _Half(CheckedEnv(second, f"{self.name}[B]"), n_a, True)]
                    self._env, self.overlapping = self._halves[0].env, True
                    return
                _close_quietly(first)  # "auto" on an env that steps in the caller's thread
        env = full if full is not None else self._make_env(seed)
        if self._overlap == "on":
            _close_quietly(env)
            raise ValueError(f"overlap='on' needs at least 2 envs per actor thread and "
                             f"make_env_sized; {self.name} has {env.num_envs} env(s).")
        self._halves = [_Half(CheckedEnv(env, self.name), 0, False)]
        self._env, self.overlapping = self._halves[0].env, False

    def _close_envs(self) -> None:
        for h in self._halves:
            _close_quietly(h.env)
        self._halves, self._env = [], None

    def _act(self, h: _Half, params, steps: _Steps, i: int, t: int) -> float:
        """Policy on half `h`'s observation, then `send` its action; returns the seconds."""
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
        e = time.perf_counter()
        self.phase, self.phase_since = "env.step", e
        h.send(action_host)
        return e - s

    def _record(self, h: _Half, steps: _Steps, t: int, ts: TimeStep) -> None:
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
        for h in halves:
            h.obs = h.env.reset()
            if self.agent.recurrent:
                h.core = jax.device_put(self.agent.initial_core_state(h.n), self.device)
        params, version, t_params = self._fetch_params(0)
        steps = _Steps(T, B, len(halves))
        t_infer = 0.0
        with self._first_call:  # compiled once per device; later threads find it compiled
            first = _claim_first_call(self._policy, self.device)
            if first and jax.process_index() == 0:  # a long compile is never a silent minute
                print(f"compiling the policy on {self.device} ...", flush=True)
            start = time.perf_counter()
            t_infer += self._act(halves[0], params, steps, 0, 0)
            if first and jax.process_index() == 0:
                print(f"policy compiled in {time.perf_counter() - start:.1f}s", flush=True)
        for i in range(1, len(halves)):
            t_infer += self._act(halves[i], params, steps, i, 0)
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
                        t_infer += self._act(h, params, steps, i, t + 1)
                        continue
                    # Half A's last step is back. The next rollout starts now, with the newest
                    # parameters, so the pools never drain at a rollout boundary, unless
                    # - the actor is on-policy (`synchronous`): the parameters it needs come
                    #   from the update this rollout feeds, so it ships first, then waits;
                    # - its queue is full (the learner is behind): the put will block, and
                    #   parameters fetched after it are fresher (no extra policy lag).
                    if i == 0 and not self._synchronous and not self._queue.full():
                        nxt = _Steps(T, B, len(halves))
                        p2, v2, tp2 = self._fetch_params(0)
                    if nxt is not None:
                        t_next += self._act(h, p2, nxt, i, 0)
                        steps.obs[i].append(nxt.obs[i][0])  # bootstrap = next first obs
            s = time.perf_counter()
            self.phase, self.phase_since = "shipping the rollout", s
            if nxt is None:
                for i, h in enumerate(halves):
                    steps.obs[i].append(jax.device_put(h.obs, self.device))
            rollout = self._assemble(steps)
            # Device to device: split along the env axis onto the learner devices.
            rollout = jax.device_put(rollout, self._sharding)
            t_ship = time.perf_counter() - s
            msg = RolloutMessage(rollout, version, T * B, steps.episodes,
                                 {"actor/params_wait_s": t_params, "actor/inference_s": t_infer,
                                  "actor/env_s": t_env, "actor/ship_s": t_ship}, self.actor_id)
            self._set_phase("waiting for queue space")
            msg.timings["actor/queue_put_s"] = blocking_put(self._queue, msg, self._lifetime)
            if nxt is not None:
                params, version, t_params, steps, t_infer = p2, v2, tp2, nxt, t_next
                continue
            # On-policy: wait for the update this rollout feeds.
            params, version, t_params = self._fetch_params(
                version + 1 if self._synchronous else 0)
            steps = _Steps(T, B, len(halves))
            t_infer = sum(self._act(h, params, steps, i, 0) for i, h in enumerate(halves))

    def _assemble(self, steps: _Steps) -> Rollout:
        """One Rollout on the actor device, env axis = [half A's envs, half B's envs]."""
        host = (steps.reward, steps.terminated, steps.truncated, steps.valid)
        first = None if steps.first_state[0] is None else steps.first_state
        if len(steps.obs[0]) <= _STACK_CHUNK:  # the usual T: one dispatch for the rollout
            return _assemble_rollout(steps.obs, steps.action, steps.extras, host, first)
        core = None if first is None else _first_state(first)
        host = jax.device_put(host, self.device)
        return Rollout(obs=_stack_halves(steps.obs), action=_stack_halves(steps.action),
                       reward=host[0], terminated=host[1], truncated=host[2], valid=host[3],
                       extras=_stack_halves(steps.extras), core_state=core)


def _close_quietly(env) -> None:
    """Closes an env on the way out; a broken env may fail to close, which must not hide the
    error that ended the run."""
    if env is None:
        return
    try:
        env.close()
    except Exception as e:  # noqa: BLE001
        print(f"WARNING: closing an env failed: {e!r}", flush=True)
