"""The Anakin training loop on the host: one compiled call per update (or per
`updates_per_call` updates), then logging, episode statistics, checkpoints and evaluations.

Everything per step happens on the devices (anakin/update_program.py, called through
anakin/programs.py); the host loop (`_HostLoop`) reads each call's metrics and finished games
and records them with the core's `Ledger`, under Sebulba's names. Fused calls and their pace
(anakin/call_pace.py), running one call ahead, populations, signals and multi-process
lockstep: docs/anakin.md, "Design".
"""
from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from anakin import population as pop
from anakin import host_games, programs, runtime_config, topology
from anakin.call_pace import CallPace, call_length
from anakin.diverged import Diverged
from podracer import distributed
from podracer.agent import Agent
from podracer.checkpoint import Checkpointer, Progress
from podracer.episode_metrics import EpisodeMetric
from podracer.finite import NonFiniteError
from podracer.ledger import Ledger, UpdateHook
from podracer.logging import EpisodeStats, MetricsLogger
from podracer.results import Interrupted, TrainResult
from podracer.signals import Abandoned, StopOnSignal, wait_ready

PyTree = Any


def train(agent: Agent | pop.Population, env, ac: runtime_config.AnakinConfig,
          logger: MetricsLogger | Sequence[MetricsLogger], *,
          checkpointer: Checkpointer | None = None, resume: Progress | None = None,
          on_update: Callable[[int, int, PyTree], None] | None = None,
          mesh: Mesh | None = None, episode_metrics: Sequence[EpisodeMetric] = ()
          ) -> TrainResult:
    """Trains `agent` on the JAX-native `env` for the run's planned updates, all on the devices.

    Args:
      agent: the four-function agent, or a `Population` of M members (one program).
      env: an anakin.envs env (JAX reset and step).
      ac: the runtime config (devices, envs, T, steps, `updates_per_call`, ...).
      logger: one MetricsLogger, or one per member of a population.
      checkpointer: saves on its schedule and at the end; closed here.
      resume: continues a checkpointed run (fresh env streams, as Sebulba's actors).
      on_update: `on_update(update, env_steps, state)` (one agent only), run after every
        update whose state the loop holds (each update, or each call's last with K > 1); a
        hook with `due(update)` (podracer.ledger.UpdateHook, the evaluator) gets exactly its
        updates.
      mesh: the devices' mesh, if the caller built it already (for `ac.learner_device_ids`).
      episode_metrics: the env's info fields reduced over each game on the devices
        (anakin/episode_metrics.py), logged as `episode/<name>` per member.

    Returns:
      The `TrainResult`: final learner state, env steps and updates.

    Raises:
      Interrupted: Ctrl-C, after the final checkpoint (it carries the TrainResult).
      distributed.PeerLost: another process of the job died.
      NonFiniteError: more non-finite updates in a row than `ac.max_nonfinite_updates`
        (with its `result`, after the final checkpoint); in a population, once every member
        has: a member that diverges alone is frozen at its last good state (its envs step on
        in the shared program, its rows stop) and the others go on; the result's `members`
        say which diverged, where and why, and so do the population's checkpoints.
    """
    population = isinstance(agent, pop.Population) and agent.size > 1
    loggers = list(logger) if isinstance(logger, (list, tuple)) else [logger]
    if population:
        if len(loggers) != agent.size:
            raise ValueError(f"a population of {agent.size} members needs {agent.size} "
                             f"loggers, got {len(loggers)}.")
        if on_update is not None:
            raise ValueError("on_update takes one agent's state; a population has several.")
    elif isinstance(agent, pop.Population):
        agent = agent.make_agent(agent.member_hparams(0))
    mesh = mesh if mesh is not None else topology.make_mesh(ac.learner_device_ids)
    program = (programs.Members(agent, env, ac, mesh, episode_metrics) if population
               else programs.OneAgent(agent, env, ac, mesh, episode_metrics))
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    state, runner = program.init(example, resume.updates if resume else 0, resume)
    loop = _HostLoop(program, ac, loggers, state, runner, population, episode_metrics,
                     checkpointer, resume, on_update)
    return loop.run()


class _HostLoop:
    """The host's side of one Anakin run: dispatches the compiled calls (one ahead when
    nothing needs the state in between), reads each call's rows and finished games, records
    them with one `Ledger` per member, and keeps the newest complete update's `Progress`
    (`snap`: what a checkpoint saves; None while the state is donated to a call in flight, so
    a failure never saves a half-made state)."""

    def __init__(self, program, ac: runtime_config.AnakinConfig, loggers: list[MetricsLogger],
                 state, runner, population: bool, episode_metrics: Sequence[EpisodeMetric],
                 checkpointer: Checkpointer | None, resume: Progress | None,
                 on_update) -> None:
        self.program, self.ac, self.loggers = program, ac, loggers
        self.state, self.runner = state, runner
        self.population, self.size = population, len(loggers)
        self.checkpointer = checkpointer
        self.num_metrics = len(episode_metrics)
        self.processes = processes = jax.process_count()
        self.episodes = [EpisodeStats.of(episode_metrics) for _ in range(self.size)]
        if resume:
            saved = resume.episodes["members"] if population else [resume.episodes]
            for stats, s in zip(self.episodes, saved):
                stats.load_state_dict(s)
        # Members stopped by non-finite updates, frozen from then on (a resume keeps them so).
        self.diverged = Diverged(
            loggers, resume.episodes.get("diverged") if resume and population else None)
        self.start_steps = resume.env_steps if resume else 0
        self.updates = resume.updates if resume else 0
        self.env_steps = self.start_steps
        self.end = ac.plan(processes).planned_updates(self.updates, self.env_steps)
        self.ledgers = [
            Ledger(lg, ep, end_update=self.end, max_nonfinite_updates=ac.max_nonfinite_updates,
                   stop_at_return=ac.stop_at_return,
                   checkpointer=None if population else checkpointer,
                   on_update=None if population else on_update,
                   name=f"member {m}" if population else "")
            for m, (lg, ep) in enumerate(zip(loggers, self.episodes))]
        self.steps = ac.unroll_length * ac.num_envs  # one update's steps of a member here
        self.pace = CallPace(ac.updates_per_call, ac.call_target_s)
        # A call's length depends on the process (its own clock paces it; only process 0 has
        # the checkpointer and evaluator that cut it short): process 0's is every process's,
        # or the calls' collectives would not pair up.
        self.agree = processes > 1 and ac.updates_per_call > 1
        # Running ahead (next call dispatched before this one's rows are read) donates this
        # call's state before the host sees it; a hook that wants every call's state, or a
        # return target that may stop the run at this call, needs the host to look first.
        # Several processes must send their collectives (the calls, the games' gather) in one
        # order: the choice depends on the clock (a timed checkpoint), so they never run ahead.
        self.may_run_ahead = (processes == 1 and ac.stop_at_return is None
                              and (on_update is None or isinstance(on_update, UpdateHook)))
        self.t_start = time.perf_counter()
        self.snap: Progress | None = self.progress()
        self.dispatched = self.updates  # the update counter after every call dispatched
        self.last_done = self.t_start  # when the host last saw a call's outputs
        self.signals: StopOnSignal | None = None

    def due(self, update: int) -> bool:
        return (any(ledger.due(update) for ledger in self.ledgers)
                or (self.population and self.checkpointer is not None
                    and self.checkpointer.due(update)))

    def progress(self) -> Progress:
        saved = ({"members": [e.state_dict() for e in self.episodes],
                  "diverged": self.diverged.state_dict()}
                 if self.population else self.episodes[0].state_dict())
        return Progress(self.state, self.env_steps, self.updates, saved)

    def more(self) -> bool:
        return (self.dispatched < self.end and self.signals.received is None
                and not all(ledger.target_reached for m, ledger in enumerate(self.ledgers)
                            if m not in self.diverged))

    def run_ahead(self) -> bool:
        """Whether nothing needs the state of the call in flight (no hook or checkpoint due at
        its end, by count or time; no signal): the next call may then go before it is read."""
        return (self.may_run_ahead and self.more() and not self.due(self.dispatched)
                and (self.checkpointer is None or not self.checkpointer.time_due()))

    def dispatch(self) -> _Call:
        with distributed.peer_check(self.dispatched, self.env_steps):
            k = call_length(self.pace.next_length(), self.dispatched, self.end, self.due)
            if self.agree:
                k = int(distributed.broadcast_host(np.int32(k)))
            self.snap = None
            t0 = time.perf_counter()
            active = self.diverged.active() if self.population else None
            if getattr(self.program, "reads_progress", False):  # a curriculum reads the games
                self.runner = self.program.with_recent(self.runner,
                                                       [e.recent() for e in self.episodes])
            self.state, self.runner, metrics, eps = self.program.update(
                k, self.state, self.runner, active)
        self.dispatched += k
        return _Call(k, t0, metrics, eps, active)

    def finish(self, call: _Call, holds_state: bool) -> None:
        """Reads `call`'s outputs and records its updates; `holds_state`: the loop's state is
        this call's (nothing ran ahead), so it is the snapshot and goes to the hooks."""
        with distributed.peer_check(self.updates, self.env_steps):
            # Polled, not a blocking device_get: a second signal abandons the call.
            metrics, eps = wait_ready((call.metrics, call.eps), self.signals.urgent)
            rows, games = self.program.split(jax.device_get(metrics), eps, call.k)
            t1 = time.perf_counter()
            # On the devices the call began when it was sent or when the one before it ended.
            seconds = t1 - max(call.t0, self.last_done)
            self.last_done = t1
            self.pace.observe(call.k, seconds)
            games = host_games.gather_games(games, self.steps, self.num_metrics)
        records = []
        for per_member, done in zip(rows, games):
            self.updates += 1
            self.env_steps += self.steps * self.processes
            for m, (metrics_m, games_m) in enumerate(zip(per_member, done)):
                if call.active is not None and not call.active[m]:
                    continue  # frozen: its state did not move, its games are not its policy's
                self.episodes[m].add(games_m)
                scalars = {name: float(np.asarray(v)) for name, v in metrics_m.items()}
                scalars.update({
                    "sps": (self.env_steps - self.start_steps) / max(t1 - self.t_start, 1e-9),
                    "updates": float(self.updates), "policy_lag/mean": 0.0,
                    "policy_lag/max": 0.0, "time/learner_step_s": seconds / call.k,
                    **self.episodes[m].summary()})
                records.append((m, self.updates, self.env_steps, scalars))
        if holds_state:  # the call's state is its last update's: counters and state together
            self.snap = self.progress()
        stop, newly = None, False  # every row is logged, even after one that stops the run
        for i, (m, u, at, scalars) in enumerate(records):
            last = holds_state and not self.population and i >= len(records) - self.size
            try:
                self.ledgers[m].record(u, at, scalars, self.state if last else None)
            except NonFiniteError as e:
                if not self.population:
                    stop = stop or e
                else:  # frozen from the next call on; the others go on
                    newly = self.diverged.add(m, u, at, e) or newly
        if holds_state and newly:  # the snapshot (what checkpoints save) records them too
            self.snap = self.progress()
        if stop is not None:
            raise stop
        if holds_state and self.population and self.checkpointer is not None:
            self.checkpointer.after_update(self.snap)

    def run(self) -> TrainResult:
        """Calls until the planned updates are done, a signal stops the run or every member
        reached its return target; then the final checkpoint and the result (raising as
        `train` says)."""
        abandoned, nonfinite, final = False, None, None
        with StopOnSignal() as signals:
            self.signals = signals
            ahead: _Call | None = None
            try:
                while ahead is not None or self.more():
                    call = ahead if ahead is not None else self.dispatch()
                    ahead = self.dispatch() if self.run_ahead() else None
                    try:
                        self.finish(call, holds_state=ahead is None)
                    except (distributed.PeerLost, Abandoned):
                        raise
                    except Exception:
                        # The call ahead holds the newest state: finish it too, so the final
                        # checkpoint is a complete update's (its rows are logged); the first
                        # error is the one reported.
                        if ahead is not None:
                            try:
                                self.finish(ahead, holds_state=True)
                            except Abandoned:
                                abandoned = True
                            except Exception:  # noqa: BLE001 (reported: the first error)
                                pass
                            ahead = None
                        raise
            except NonFiniteError as e:  # re-raised below, once the last good state is saved
                nonfinite = e
            except Abandoned:
                abandoned = True
            finally:
                for lg in self.loggers:
                    lg.close()
                if self.checkpointer is not None:
                    final = self.checkpointer.close(self.snap)
        return self._result(final, abandoned, nonfinite, signals.received)

    def _result(self, final, abandoned: bool, nonfinite, received) -> TrainResult:
        snap = self.snap
        # After an abandoned call, the newest complete update's state was donated to it: none.
        members = ([{"episode_summary": e.summary(), "last_metrics": ledger.last_metrics,
                     "diverged": self.diverged.get(m)}
                    for m, (e, ledger) in enumerate(zip(self.episodes, self.ledgers))]
                   if self.population else None)
        result = TrainResult(snap.learner_state if snap is not None else None, self.env_steps,
                             self.updates, self.episodes[0].summary(),
                             self.ledgers[0].last_metrics, received, final, abandoned, members)
        if self.population and received is None:
            nonfinite = self.diverged.every_member_error() or nonfinite
        if nonfinite is not None:
            # Its update may be a call later than the stop, when that call had already been
            # sent.
            where = (f" (update {self.updates:,d}, env step {self.env_steps:,d})" if final
                     else "")
            raise NonFiniteError(f"{nonfinite} Checkpoint of the last good learner state"
                                 f"{where}: {final or 'none (checkpoints off)'}.",
                                 result) from None
        if received == "SIGINT":
            raise Interrupted(result)
        return result


class _Call(NamedTuple):
    """A dispatched call: its length, when it was sent, its (future) outputs, and which
    members it updated (a population's; None for one agent)."""

    k: int
    t0: float
    metrics: dict
    eps: Any
    active: np.ndarray | None = None
