"""The training loop: starts actor threads, runs the learner in the calling thread, logs.

`train` owns the lifetime of every thread: an error in any of them, Ctrl-C or SIGTERM stops all
threads, joins them with a timeout (threads are daemons, so a stuck env cannot hang the exit)
and re-raises, so the process ends promptly and with a non-zero status on errors.

Ctrl-C and SIGTERM stop gracefully: the learner finishes its update, a final checkpoint is
written, then SIGTERM (pre-emption) returns normally (exit 0) and Ctrl-C raises `Interrupted`
(a KeyboardInterrupt carrying the TrainResult). A second signal abandons the update in flight
and stops waiting for threads; the final checkpoint then holds the newest *complete* update
(none if its state was donated to the abandoned one). If the main thread is stuck in C++ (a
compilation) and cannot run the handler, a watcher thread ends the process a few seconds after
the second signal (podracer/signals.py, shared with the Anakin runtime). The loop never raises
from a signal handler: it publishes one immutable `_Snapshot` (state, counters, episode
statistics) per update with a single assignment, so whatever interrupts it, the checkpoint's
label and the state inside it belong to the same update.

A collective that fails because another process died (multi-host) raises
`distributed.PeerLost`; the update in flight is not saved (it is incomplete).

Faults (docs/robustness.md): a non-finite update is skipped by the learner (learner.keep_finite)
and counted here; `max_nonfinite_updates` in a row raise NonFiniteError after a checkpoint of
the last good state. Actors report broken envs (sebulba/env_guard.py) and may rebuild them; a
learner without data, or an actor without parameters, warns after `stall_warning_s`.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Any, Callable, Sequence

import jax
import numpy as np

from podracer import distributed
from podracer.agent import Agent, PyTree
from podracer.batch import UpdatePlan
from podracer.checkpoint import Checkpointer, Progress
from podracer.episode_metrics import EpisodeMetric
from podracer.finite import NonFiniteError
from podracer.ledger import Ledger
from podracer.logging import EpisodeStats, MetricsLogger
from podracer.results import Interrupted, TrainResult
from podracer.signals import Abandoned, StopOnSignal, wait_ready
from sebulba import layout
from sebulba.actor import ActorThread, RolloutMessage
from sebulba.learner import MetricsPacker, make_learn_fn, place_learner_state
from sebulba.pipeline import Lifetime, ParamsSource, Stopped, blocking_get
from sebulba.runtime_config import RuntimeConfig
from sebulba.topology import Topology, make_topology
from sebulba.warmup import BackgroundCompile, abstract_rollout

@dataclasses.dataclass(frozen=True)
class _Snapshot:
    """The newest complete update: what a checkpoint saves. Replaced whole, never mutated, so
    the state and the counters always belong together. `state` is None while the state is
    donated to an update in flight (nothing intact to save until it finishes)."""

    state: PyTree
    env_steps: int
    updates: int
    episodes: dict  # EpisodeStats.state_dict() after this update

    def progress(self) -> Progress:
        return Progress(self.state, self.env_steps, self.updates, self.episodes)


def train(agent: Agent, make_env: Callable[[int, int], Any], rc: RuntimeConfig,
          logger: MetricsLogger, *,
          on_update: Callable[[int, int, PyTree], None] | None = None,
          actor_hook: Callable | None = None, checkpointer: Checkpointer | None = None,
          resume: Progress | None = None, example_obs: PyTree | None = None,
          topology: Topology | None = None,
          episode_metrics: Sequence[EpisodeMetric] = ()) -> TrainResult:
    """Trains `agent` with Sebulba's actor threads and learner for the run's planned updates.

    Args:
      agent: the four-function agent (podracer.agent.Agent).
      make_env: `make_env(num_envs, seed)` builds one env batch (sebulba/envs.py's API).
      rc: the runtime config; an auto (0) `num_actor_threads` is resolved here for this
        machine (sebulba.layout.resolve; a run from a config resolved it when it read it).
      logger: where each update's metrics go (TensorBoard, metrics.jsonl, console).
      on_update: `on_update(update, env_steps, learner_state)`, run after each update.
      actor_hook: called by each actor thread at each step (tests inject faults with it).
      checkpointer: saves on its schedule and once more at the end (also after errors and
        signals, whenever the learner state is intact); closed here.
      resume: a restored state: learner state, counters and episode statistics carry on.
      example_obs: one observation batch of the env (any leading size), if the caller probed
        the env already; it also lets the learner compile while the actors start.
      topology: the run's device topology, if the caller built it already.
      episode_metrics: info fields reduced over each game and logged beside the return
        (env.episode_metrics; the env's fields were checked by the caller).

    Returns:
      The `TrainResult`: final learner state, env steps and updates.

    Raises:
      Interrupted: Ctrl-C, after the final checkpoint (it carries the TrainResult).
      distributed.PeerLost: another process of the job died.
      NonFiniteError: more non-finite updates in a row than `rc.max_nonfinite_updates`,
        after the final checkpoint (it carries the TrainResult).
    """
    if rc.num_actor_threads == 0:
        rc = layout.resolve(rc).runtime
    topo = topology or make_topology(rc.actor_device_ids, rc.learner_device_ids,
                                     rc.envs_per_thread)
    plan = rc.plan(topo.num_processes)
    if resume is None and example_obs is None:
        probe = make_env(1, rc.seed)
        example_obs = probe.reset()
        probe.close()
    if resume is None:
        state = _init(agent, jax.random.key(rc.seed), example_obs)
    else:
        state = resume.learner_state
    state = place_learner_state(state, topo)
    packer = MetricsPacker()
    learn = make_learn_fn(agent, topo, packer)
    lifetime = Lifetime()
    params = ParamsSource(list(topo.actor_devices), lifetime, rc.stall_warning_s)
    loop = _HostLoop(rc, plan, logger, lifetime, [], topo, state, resume, packer,
                     checkpointer, on_update, tuple(episode_metrics))
    if example_obs is not None and loop.updates < loop.end_update:
        # Compile the learner while the actors start and compile (never for a run with
        # nothing left to do: a compile still running at interpreter exit aborts it).
        spec = abstract_rollout(agent, jax.eval_shape(agent.actor_params, state), example_obs,
                                rc.unroll_length, rc.envs_per_thread * topo.num_processes,
                                topo.batch_sharded())
        threads = len(topo.actor_devices) * rc.num_actor_threads
        loop.warmup = BackgroundCompile("learner", learn, state, (spec,) * threads,
                                        announce=jax.process_index() == 0)
        loop.warmup.start()
    params.publish(agent.actor_params(state), loop.updates, loop.episodes.recent())
    final = nonfinite = None
    abandoned = False
    with StopOnSignal(lifetime.stop) as signals:
        loop.urgent = signals.urgent
        actors, loop.queues = _start_actors(agent, make_env, rc, topo, params, lifetime,
                                            actor_hook, loop.updates, episode_metrics)
        loop.actors = actors
        try:
            loop.run(learn, agent, params)
        except Stopped:
            pass
        except Abandoned:
            abandoned = True
        except NonFiniteError as e:  # re-raised below, once the last good state is saved
            nonfinite = e
        finally:
            lifetime.stop()
            deadline = time.time() + rc.join_timeout_s
            for a in actors:  # in slices: a second signal stops the waiting
                while (a.is_alive() and not signals.urgent.is_set()
                       and time.time() < deadline):
                    a.join(min(0.1, max(0.0, deadline - time.time())))
            if loop.warmup is not None:  # stopped before the first update
                loop.await_warmup()
            logger.close()
            if checkpointer is not None:
                # One snapshot, read once: its state (None if donated to an unfinished update)
                # and its counters belong to the same update.
                snap = loop.snapshot
                final = checkpointer.close(snap.progress() if snap.state is not None else None)
    snap = loop.snapshot
    result = TrainResult(snap.state, snap.env_steps, snap.updates,
                         EpisodeStats.restored(snap.episodes, loop.episodes.bins).summary(),
                         loop.ledger.last_metrics,
                         signals.received,
                         final, abandoned)
    if nonfinite is not None:
        raise NonFiniteError(f"{nonfinite} Checkpoint of the last good learner state: "
                             f"{final or 'none (checkpoints off)'}.", result) from None
    lifetime.raise_if_failed()
    if signals.received == "SIGINT":
        raise Interrupted(result)
    return result


def _init(agent: Agent, key, example_obs) -> PyTree:
    """`agent.init` as one compiled program (op by op it dispatches, and compiles, every
    layer's initialiser separately); a user agent whose init branches on values in Python
    cannot be traced, and runs eagerly as before."""
    try:
        return jax.jit(agent.init)(key, example_obs)
    except jax.errors.JAXTypeError:
        return agent.init(key, example_obs)


def actor_seed(seed: int, actor_id: int, start_update: int = 0) -> int:
    """Env and action-sampling seed of an actor thread.

    EnvPool seeds env i of a pool with seed + i: space the pools (and hosts) apart. A run
    resumed at update u > 0 draws fresh streams (a function of seed and u, so resuming is
    reproducible) instead of replaying the first session's episodes; below 2**30 + offsets,
    since EnvPool needs int32 seeds.
    """
    base = seed
    if start_update > 0:
        base = int(np.random.SeedSequence([seed, start_update]).generate_state(1)[0]) >> 2
    return base + 100_003 * (actor_id + 1) + 10_000_019 * jax.process_index()


def _start_actors(agent, make_env, rc, topo: Topology, params, lifetime, hook,
                  start_update: int, episode_metrics: Sequence[EpisodeMetric]):
    actors, queues = [], []
    for d, device in enumerate(topo.actor_devices):
        for t in range(rc.num_actor_threads):
            actor_id = d * rc.num_actor_threads + t
            q: queue.Queue = queue.Queue(maxsize=rc.queue_size)
            seed = actor_seed(rc.seed, actor_id, start_update)
            actors.append(ActorThread(
                actor_id=actor_id, device=device, agent=agent,
                make_env=lambda s: make_env(rc.envs_per_thread, s), seed=seed,
                unroll_length=rc.unroll_length, params=params, out_queue=q,
                learner_sharding=topo.local_batch_sharded(), lifetime=lifetime,
                synchronous=rc.synchronous, on_step=hook,
                max_env_restarts=rc.max_env_restarts if rc.restart_envs_on_error else 0,
                make_env_sized=make_env, overlap=rc.actor_overlap, num_envs=rc.envs_per_thread,
                episode_metrics=episode_metrics,
                steps_per_update=rc.plan(topo.num_processes).steps_per_update))
            queues.append(q)
    for a in actors:
        a.start()
    return actors, queues


class _HostLoop:
    """Consumes one rollout per actor thread per update; logs stage timings and lag.

    `snapshot` is the newest complete update; the loop replaces it with one assignment when an
    update is fully accounted for (state, counters, episodes), and with a state-less copy while
    the state is donated to the update in flight.
    """

    def __init__(self, rc: RuntimeConfig, plan: UpdatePlan, logger: MetricsLogger,
                 lifetime: Lifetime, queues: list[queue.Queue], topo: Topology, state: PyTree,
                 resume: Progress | None = None, packer: MetricsPacker | None = None,
                 checkpointer: Checkpointer | None = None, on_update=None,
                 metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.rc, self.plan, self.lifetime, self.queues = rc, plan, lifetime, queues
        self.topo = topo
        # The working copy; the snapshot holds its state_dict.
        self.episodes = EpisodeStats.of(metrics)
        if resume:
            self.episodes.load_state_dict(resume.episodes)
        self.snapshot = _Snapshot(state, resume.env_steps if resume else 0,
                                  resume.updates if resume else 0, self.episodes.state_dict())
        self.end_update = plan.planned_updates(self.updates, self.env_steps)
        self.ledger = Ledger(logger, self.episodes, end_update=self.end_update,
                             max_nonfinite_updates=rc.max_nonfinite_updates,
                             stop_at_return=rc.stop_at_return, checkpointer=checkpointer,
                             on_update=on_update)
        self.actors: list = []  # for stall warnings: what each actor is doing
        self.urgent = threading.Event()  # set by a second signal: abandon the update in flight
        self.warmup: BackgroundCompile | None = None  # the learner compiling ahead of time
        self.packer = packer  # the learn step's metrics come packed: unpacked on the host
        self._warned_stall = False

    @property
    def updates(self) -> int:
        return self.snapshot.updates

    @property
    def env_steps(self) -> int:
        return self.snapshot.env_steps

    def progress(self) -> Progress:
        return self.snapshot.progress()

    def _on_wait(self, waited: float) -> None:
        """Warns once per stall with the queue depths and what every actor is doing."""
        if not self._warned_stall and waited > self.rc.stall_warning_s:
            self._warned_stall = True
            depths = [q.qsize() for q in self.queues]
            doing = "; ".join(a.describe() for a in self.actors)
            print(f"WARNING: learner has waited {waited:.0f}s for a rollout "
                  f"(stall_warning_s={self.rc.stall_warning_s:g}; queue depths per actor: "
                  f"{depths}); actors may be stalled: {doing}.", flush=True)

    def await_warmup(self) -> None:
        """Waits for the background compilation of the learner (a second signal stops the
        waiting): the first update uses it instead of compiling the same program again, and a
        run stopped before its first update does not exit while XLA still compiles in a daemon
        thread (that thread's forced unwind at interpreter exit aborts the process)."""
        while self.warmup.is_alive() and not self.urgent.is_set():
            self.warmup.join(0.1)
        self.warmup = None

    def run(self, learn, agent: Agent, params: ParamsSource) -> None:
        start, start_steps = time.perf_counter(), self.env_steps
        if self.updates >= self.end_update:
            print(f"nothing to do: already at update {self.updates:,d} (env step "
                  f"{self.env_steps:,d}); total_env_steps={self.plan.total_env_steps:,d} leaves "
                  f"no whole update of {self.plan.steps_per_update:,d} steps.", flush=True)
        while self.updates < self.end_update and not self.ledger.target_reached:
            t0 = time.perf_counter()
            depth = sum(q.qsize() for q in self.queues)
            msgs: list[RolloutMessage] = [blocking_get(q, self.lifetime, self._on_wait)
                                          for q in self.queues]
            t1 = time.perf_counter()
            if self._warned_stall:  # warn again on the next stall, not on every slow poll
                print(f"learner: rollouts arrive again (waited {t1 - t0:.0f}s).", flush=True)
                self._warned_stall = False
            if self.warmup is not None:  # first update: its program may still be compiling
                self.await_warmup()
            done = self.snapshot
            # Donated to the update: until it finishes there is no intact state to save.
            self.snapshot = dataclasses.replace(done, state=None)
            with distributed.peer_check(done.updates, done.env_steps):
                state, metrics = learn(done.state, tuple(self.topo.to_global_batch(m.rollout)
                                                         for m in msgs))
                metrics = self._wait(metrics)  # the update's end, or a second signal
                t2 = time.perf_counter()
                # Every process runs the same layout: global steps = local steps x processes.
                env_steps = (done.env_steps
                             + sum(m.env_steps for m in msgs) * self.topo.num_processes)
                local_games = [e for m in msgs for e in m.episodes]
                self.episodes.add(distributed.gather_episodes(
                    local_games, sum(m.env_steps for m in msgs), len(self.episodes.metrics)))
            # The update is fully accounted for: publish it, state and counters together.
            self.snapshot = _Snapshot(state, env_steps, done.updates + 1,
                                      self.episodes.state_dict())
            lags = [done.updates - m.param_version for m in msgs]
            params.publish(agent.actor_params(state), self.updates,
                           self.episodes.recent() if params.wants_recent else None)
            scalars = {k: float(np.asarray(v)) for k, v in metrics.items()}
            scalars.update(self._runtime_scalars(msgs, lags, depth, t1 - t0, t2 - t1, start,
                                                 start_steps))
            self.ledger.record(self.updates, self.env_steps, scalars, state)
        return self.snapshot.state

    def _wait(self, metrics: dict) -> dict:
        """The update's metrics on the host, polled (podracer.signals.wait_ready): a second
        signal abandons the update instead of waiting for its end."""
        host = jax.device_get(wait_ready(metrics, self.urgent))
        return self.packer.unpack(host) if self.packer is not None else host

    def _runtime_scalars(self, msgs, lags, depth, wait_s, step_s, start, start_steps
                         ) -> dict[str, float]:
        # This session's steps only: a resumed run starts its clock again.
        out = {"sps": (self.env_steps - start_steps) / max(time.perf_counter() - start, 1e-9),
               "updates": float(self.updates),
               "policy_lag/mean": sum(lags) / len(lags), "policy_lag/max": float(max(lags)),
               "queue/depth": float(depth),
               "time/learner_wait_data_s": wait_s, "time/learner_step_s": step_s}
        for key in msgs[0].timings:
            out[f"time/{key}"] = sum(m.timings[key] for m in msgs) / len(msgs)
        out.update(self.episodes.summary())
        return out
