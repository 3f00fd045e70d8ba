"""The training loop: starts actor threads, runs the learner in the calling thread, logs.

`train` owns the lifetime of every thread: an error in any of them, Ctrl-C or SIGTERM stops all
threads, joins them with a timeout (threads are daemons, so a stuck env cannot hang the exit)
and re-raises, so the process ends promptly and with a non-zero status on errors.
"""
from __future__ import annotations

import contextlib
import dataclasses
import queue
import signal
import threading
import time
from typing import Any, Callable, Sequence

import jax
import numpy as np

from sebulba.actor import ActorThread, RolloutMessage
from sebulba.agent import Agent, PyTree
from sebulba.learner import make_learn_fn, place_learner_state
from sebulba.logging import EpisodeStats, MetricsLogger
from sebulba.pipeline import Lifetime, ParamsSource, Stopped, blocking_get
from sebulba.topology import Topology, make_topology


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """How the runtime lays out and paces the work (algorithm-independent)."""

    actor_device_ids: Sequence[int] = (0,)
    learner_device_ids: Sequence[int] = (0,)
    num_actor_threads: int = 2      # per actor device
    num_envs: int = 32              # per actor thread
    unroll_length: int = 20         # T, steps per rollout
    total_env_steps: int = 1_000_000  # agent steps over all actors (frames = 4x on Atari)
    queue_size: int = 1             # rollouts buffered per actor thread (backpressure)
    synchronous: bool = False       # actors wait for the newest params before each rollout
    seed: int = 0
    stall_warning_s: float = 60.0   # warn once when the learner waits this long for data
    join_timeout_s: float = 10.0    # how long to wait for threads at shutdown

    @property
    def batch_envs(self) -> int:
        """Environments per update on this host."""
        return len(self.actor_device_ids) * self.num_actor_threads * self.num_envs

    @property
    def steps_per_update(self) -> int:
        return self.batch_envs * self.unroll_length

    @property
    def num_updates(self) -> int:
        return max(1, self.total_env_steps // self.steps_per_update)


@dataclasses.dataclass
class TrainResult:
    learner_state: PyTree
    env_steps: int
    updates: int
    episode_summary: dict[str, float]
    last_metrics: dict[str, float]


def validate_runtime_config(rc: RuntimeConfig) -> None:
    """Raises ValueError naming the field, the bad value and what is allowed."""
    for name in ("num_actor_threads", "num_envs", "unroll_length", "total_env_steps",
                 "queue_size"):
        value = getattr(rc, name)
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")


class _SigtermAsInterrupt(contextlib.AbstractContextManager):
    """Turns SIGTERM into KeyboardInterrupt in the main thread, so both stop cleanly."""

    def __enter__(self):
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._handle)
        return self

    @staticmethod
    def _handle(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)
        return False


def train(agent: Agent, make_env: Callable[[int, int], Any], rc: RuntimeConfig,
          logger: MetricsLogger, *,
          on_update: Callable[[int, int, PyTree], None] | None = None,
          actor_hook: Callable | None = None) -> TrainResult:
    """Trains `agent` until `rc.total_env_steps`; `make_env(num_envs, seed)` builds a batch.

    `on_update(update, env_steps, learner_state)` runs after each update (checkpoints).
    """
    validate_runtime_config(rc)
    topo = make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.num_envs)
    probe = make_env(1, rc.seed)
    example_obs = probe.reset()
    probe.close()
    state = place_learner_state(agent.init(jax.random.key(rc.seed), example_obs), topo)
    learn = make_learn_fn(agent, topo)

    lifetime = Lifetime()
    params = ParamsSource(list(topo.actor_devices), lifetime)
    params.publish(agent.actor_params(state), 0)
    actors, queues = _start_actors(agent, make_env, rc, topo, params, lifetime, actor_hook)
    loop = _LearnerLoop(rc, logger, lifetime, queues)
    try:
        with _SigtermAsInterrupt():
            state = loop.run(state, learn, agent, params, on_update)
    except Stopped:
        pass
    finally:
        lifetime.stop()
        deadline = time.time() + rc.join_timeout_s
        for a in actors:
            a.join(max(0.0, deadline - time.time()))
        logger.close()
    lifetime.raise_if_failed()
    return TrainResult(state, loop.env_steps, loop.updates, loop.episodes.summary(),
                       loop.last_metrics)


def _start_actors(agent, make_env, rc, topo: Topology, params, lifetime, hook):
    actors, queues = [], []
    for d, device in enumerate(topo.actor_devices):
        for t in range(rc.num_actor_threads):
            actor_id = d * rc.num_actor_threads + t
            q: queue.Queue = queue.Queue(maxsize=rc.queue_size)
            # EnvPool seeds env i of a pool with seed + i: space the pools apart.
            seed = rc.seed + 100_003 * (actor_id + 1)
            actors.append(ActorThread(
                actor_id=actor_id, device=device, agent=agent,
                make_env=lambda s: make_env(rc.num_envs, s), seed=seed,
                unroll_length=rc.unroll_length, params=params, out_queue=q,
                learner_sharding=topo.batch_sharded(), lifetime=lifetime,
                synchronous=rc.synchronous, on_step=hook))
            queues.append(q)
    for a in actors:
        a.start()
    return actors, queues


class _LearnerLoop:
    """Consumes one rollout per actor thread per update; logs stage timings and lag."""

    def __init__(self, rc: RuntimeConfig, logger: MetricsLogger, lifetime: Lifetime,
                 queues: list[queue.Queue]) -> None:
        self.rc, self.logger, self.lifetime, self.queues = rc, logger, lifetime, queues
        self.env_steps = 0
        self.updates = 0
        self.episodes = EpisodeStats()
        self.last_metrics: dict[str, float] = {}
        self._warned_stall = False

    def _on_wait(self, waited: float) -> None:
        if not self._warned_stall and waited > self.rc.stall_warning_s:
            self._warned_stall = True
            depths = [q.qsize() for q in self.queues]
            print(f"WARNING: learner has waited {waited:.0f}s for a rollout "
                  f"(queue depths per actor: {depths}); actors may be stalled.", flush=True)

    def run(self, state, learn, agent: Agent, params: ParamsSource, on_update):
        start = time.perf_counter()
        while self.env_steps < self.rc.total_env_steps:
            t0 = time.perf_counter()
            depth = sum(q.qsize() for q in self.queues)
            msgs: list[RolloutMessage] = [blocking_get(q, self.lifetime, self._on_wait)
                                          for q in self.queues]
            t1 = time.perf_counter()
            state, metrics = learn(state, tuple(m.rollout for m in msgs))
            metrics = jax.device_get(metrics)  # waits for the update to finish
            t2 = time.perf_counter()
            lags = [self.updates - m.param_version for m in msgs]
            self.updates += 1
            params.publish(agent.actor_params(state), self.updates)
            self.env_steps += sum(m.env_steps for m in msgs)
            for m in msgs:
                self.episodes.add(m.episodes)
            scalars = {k: float(np.asarray(v)) for k, v in metrics.items()}
            scalars.update(self._runtime_scalars(msgs, lags, depth, t1 - t0, t2 - t1, start))
            self.last_metrics = scalars
            self.logger.write(self.env_steps, scalars,
                              force_print=self.env_steps >= self.rc.total_env_steps)
            if on_update is not None:
                on_update(self.updates, self.env_steps, state)
        return state

    def _runtime_scalars(self, msgs, lags, depth, wait_s, step_s, start) -> dict[str, float]:
        out = {"sps": self.env_steps / max(time.perf_counter() - start, 1e-9),
               "updates": float(self.updates),
               "policy_lag/mean": float(np.mean(lags)), "policy_lag/max": float(np.max(lags)),
               "queue/depth": float(depth),
               "time/learner_wait_data_s": wait_s, "time/learner_step_s": step_s}
        for key in msgs[0].timings:
            out[f"time/{key}"] = float(np.mean([m.timings[key] for m in msgs]))
        out.update(self.episodes.summary())
        return out
