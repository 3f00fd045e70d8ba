"""The envs an actor thread steps: one pool, or two half-pools stepped in turn (overlap), each
with its per-env state (latest observation, reset flags, core state, episode counters).

Overlap (`overlap`, RuntimeConfig.actor_overlap): the thread's `num_envs` envs are two
half-pools A and B (envs [0, n_A) and [n_A, num_envs) of the rollout's env axis, seeded as the
one pool would be: env i gets seed + i). The policy runs on A's observations while B's step
runs in the env's own threads (EnvPool's C++ workers, `send`/`recv`; envs with only `step` get
a helper thread from sebulba/env_guard.py), then the other way round, so a step costs about
max(env, inference) instead of their sum. Each half-pool is stepped in lockstep with
batch_size == num_envs (EnvPool's `recv` then returns every env of the half in env-id order),
so no env comes back out of order and the rollout keeps its exact [T, B] layout. Without
overlap, one pool is stepped and the policy waits for it. "auto" overlaps only where it was
measured to pay (`wants_overlap`, docs/benchmarks.md).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from podracer.episode_metrics import EpisodeAccumulator, EpisodeMetric
from sebulba.env_guard import CheckedEnv, has_native_send_recv
from sebulba.envs import TimeStep

OVERLAP_MODES = ("auto", "on", "off")


class EpisodeCounter:
    """True game returns and lengths, and the env.episode_metrics of each game, accumulated on
    the host per env. A finished game is (return, length, *metric values)."""

    def __init__(self, n: int, metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.returns = np.zeros(n, np.float64)
        self.lengths = np.zeros(n, np.int64)
        self.metrics = EpisodeAccumulator(metrics, n) if metrics else None

    def update(self, ts: TimeStep, valid: np.ndarray, out: list[tuple]) -> None:
        self.returns += ts.reward
        self.lengths += valid
        if self.metrics is not None:
            self.metrics.update(ts.info, valid)
        over = ts.episode_over
        if over.any():  # rare: the common step skips the index search
            for i in np.flatnonzero(over):
                extra = self.metrics.finish(i) if self.metrics is not None else ()
                out.append((float(self.returns[i]), int(self.lengths[i]), *extra))
            self.returns[over] = 0.0
            self.lengths[over] = 0


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


class HalfPool:
    """One part of a thread's envs (the whole pool when not overlapping) and its per-env
    state: the latest observation, reset flags, LSTM core state and episode counters."""

    def __init__(self, env: CheckedEnv, lo: int, overlap: bool,
                 metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.env, self.n, self.lo = env, env.num_envs, lo
        self.hi = lo + self.n
        self.overlap = overlap  # send/recv (steps in the background) rather than step
        self.obs: Any = None
        self.prev_done = np.zeros(self.n, bool)
        # reset[b]: env b sees a new episode's first observation at this step. The first step
        # of a pool, and the step after each reset step (valid False) of the previous one.
        self.reset = np.ones(self.n, bool)
        self.core: Any = None
        self.counter = EpisodeCounter(self.n, metrics)
        self.progress_version: int | None = None  # the update whose progress the envs have
        self._action: Any = None

    def send(self, action: Any) -> None:
        if self.overlap:
            self.env.send(action)
        else:
            self._action = action

    def recv(self) -> TimeStep:
        return self.env.recv() if self.overlap else self.env.step(self._action)


def build_halves(name: str, seed: int, *, mode: str, platform: str, num_envs: int | None,
                 make_env: Callable[[int], Any],
                 make_sized: Callable[[int, int], Any] | None,
                 metrics: Sequence[EpisodeMetric] = ()) -> tuple[list[HalfPool], bool]:
    """Two half-pools (overlap) or one pool; env i of the thread gets seed + i either way.
    Returns (the half-pools, whether they overlap). `name` (the thread's) names the envs in
    errors; `num_envs`, when known, spares a probe pool; `metrics` (env.episode_metrics) are
    reduced over each game beside its return."""
    n, full = num_envs, None
    if mode != "off" and make_sized is not None and (mode == "on" or platform != "cpu"):
        if n is None:  # not told: the whole pool says how many envs a thread has
            full = make_env(seed)
            n = full.num_envs
            if n >= 2 and wants_overlap(mode, full, platform):
                close_quietly(full)
                full = None
        if full is None and n >= 2:
            n_a = (n + 1) // 2
            first = make_sized(n_a, seed)
            if wants_overlap(mode, first, platform):
                second = make_sized(n - n_a, seed + n_a)  # envs n_A.. keep their seeds
                return [HalfPool(CheckedEnv(first, f"{name}[A]"), 0, True, metrics),
                        HalfPool(CheckedEnv(second, f"{name}[B]"), n_a, True, metrics)], True
            close_quietly(first)  # "auto" on an env that steps in the caller's thread
    env = full if full is not None else make_env(seed)
    if mode == "on":
        close_quietly(env)
        raise ValueError(f"overlap='on' needs at least 2 envs per actor thread and "
                         f"make_env_sized; {name} has {env.num_envs} env(s).")
    return [HalfPool(CheckedEnv(env, name), 0, False, metrics)], False


def close_quietly(env) -> None:
    """Closes an env on the way out; a broken env may fail to close, which must not hide the
    error that ended the run."""
    if env is None:
        return
    try:
        env.close()
    except Exception as e:  # noqa: BLE001
        print(f"WARNING: closing an env failed: {e!r}", flush=True)
