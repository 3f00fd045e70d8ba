"""The Anakin training loop on the host: one compiled call per update (or per
`updates_per_call` updates), then logging, episode statistics, checkpoints and evaluations.

Everything per step happens on the devices (anakin/runtime.py); the host reads each update's
metrics and finished games and records them with the core's `Ledger`, under Sebulba's names.
Fused calls and their pace (`CallPace`), running one call ahead, populations, signals and
multi-process lockstep: docs/anakin.md, "Design".
"""
from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from anakin import population as pop
from anakin import host_games, runtime
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


class _Single:
    """One agent: today's compiled update, unbatched (its checkpoints and speed unchanged)."""

    def __init__(self, agent: Agent, env, ac, mesh: Mesh,
                 episode_metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.agent, self.env, self.ac, self.mesh = agent, env, ac, mesh
        self.num_metrics = len(episode_metrics)
        self.program = runtime.make_update_fn(agent, env, mesh, ac.unroll_length,
                                              ac.updates_per_call, episode_metrics)

    def init(self, example, start_update: int, resume: Progress | None):
        ac = self.ac
        state = (self.agent.init(jax.random.key(ac.seed), example) if resume is None
                 else resume.learner_state)
        runner = runtime.init_runner(self.agent, self.env,
                                     runtime.runner_key(ac.seed, start_update), ac.num_envs,
                                     self.num_metrics)
        return runtime.place_replicated(state, self.mesh), runtime.place_runner(runner, self.mesh)

    def update(self, k: int, state, runner, active=None):
        if self.ac.updates_per_call == 1:
            return self.program(state, runner)
        return self.program(state, runner, n=k)

    def split(self, metrics: dict, eps, k: int) -> tuple[list[list[dict]], list[list[list]]]:
        """[update][member] metrics and games of a call of k updates."""
        if self.ac.updates_per_call == 1:
            return [[metrics]], [[g] for g in host_games.local_episodes(eps)]
        games = host_games.local_episodes(eps, k)  # rounds from k on were skipped
        rows = [{n: v[i] for n, v in metrics.items()} for i in range(k)]
        return [[m] for m in rows], [[g] for g in games]


class _Population:
    """M members in one program (anakin/population.py)."""

    def __init__(self, population: pop.Population, env, ac, mesh: Mesh,
                 episode_metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.population, self.env, self.ac, self.mesh = population, env, ac, mesh
        self.num_metrics = len(episode_metrics)
        self.hparams = population.stacked_hparams()
        self.program = pop.make_update_fn(population, env, mesh, ac.unroll_length,
                                          ac.updates_per_call, episode_metrics)

    def init(self, example, start_update: int, resume: Progress | None):
        states, runners = pop.init(self.population, self.env, example, start_update,
                                   self.ac.num_envs, self.num_metrics)
        if resume is not None:
            states = resume.learner_state
        return pop.place(states, runners, self.mesh)

    def update(self, k: int, states, runners, active=None):
        if self.ac.updates_per_call == 1:
            return self.program(self.hparams, states, runners, active=active)
        return self.program(self.hparams, states, runners, active=active, n=k)

    def split(self, metrics: dict, eps, k: int):
        size = self.population.size
        fused = self.ac.updates_per_call > 1
        games = pop.local_episodes(eps, size, k)  # rounds from k on were skipped
        stacked = metrics if fused else {n: np.asarray(v)[None] for n, v in metrics.items()}
        rows = [[{n: v[i][m] for n, v in stacked.items()} for m in range(size)]
                for i in range(k)]
        return rows, games


def train(agent: Agent | pop.Population, env, ac: runtime.AnakinConfig,
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
        size = agent.size
        if len(loggers) != size:
            raise ValueError(f"a population of {size} members needs {size} loggers, got "
                             f"{len(loggers)}.")
        if on_update is not None:
            raise ValueError("on_update takes one agent's state; a population has several.")
    else:
        size = 1
        if isinstance(agent, pop.Population):
            agent = agent.make_agent(agent.member_hparams(0))
    mesh = mesh if mesh is not None else runtime.make_mesh(ac.learner_device_ids)
    program = (_Population(agent, env, ac, mesh, episode_metrics) if population
               else _Single(agent, env, ac, mesh, episode_metrics))
    names = tuple(m.name for m in episode_metrics)
    processes = jax.process_count()
    plan = ac.plan(processes)
    start_updates = resume.updates if resume else 0
    start_steps = resume.env_steps if resume else 0
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    state, runner = program.init(example, start_updates, resume)

    episodes = [EpisodeStats.of(episode_metrics) for _ in range(size)]
    # Members stopped by non-finite updates: {member: where and why}, frozen from then on.
    diverged: dict[int, dict] = {}
    if resume:
        saved = resume.episodes["members"] if population else [resume.episodes]
        for stats, s in zip(episodes, saved):
            stats.load_state_dict(s)
        if population:
            diverged = {int(m): d for m, d in resume.episodes.get("diverged", {}).items()}
            for m in diverged:
                _pass_console(loggers, m, diverged)
    updates, env_steps = start_updates, start_steps
    end = plan.planned_updates(start_updates, start_steps)
    ledgers = [Ledger(lg, ep, end_update=end, max_nonfinite_updates=ac.max_nonfinite_updates,
                      stop_at_return=ac.stop_at_return,
                      checkpointer=None if population else checkpointer,
                      on_update=None if population else on_update,
                      name=f"member {m}" if population else "")
               for m, (lg, ep) in enumerate(zip(loggers, episodes))]

    def due(update: int) -> bool:
        return (any(ledger.due(update) for ledger in ledgers)
                or (population and checkpointer is not None and checkpointer.due(update)))

    def progress() -> Progress:
        saved = ({"members": [e.state_dict() for e in episodes],
                  "diverged": {str(m): d for m, d in sorted(diverged.items())}} if population
                 else episodes[0].state_dict())
        return Progress(state, env_steps, updates, saved)

    steps = ac.unroll_length * ac.num_envs  # one update's steps of a member on this process
    pace = CallPace(ac.updates_per_call, ac.call_target_s)
    # A call's length depends on the process (its own clock paces it; only process 0 has the
    # checkpointer and evaluator that cut it short): process 0's is every process's, or the
    # calls' collectives would not pair up.
    agree = processes > 1 and ac.updates_per_call > 1
    # Running ahead (next call dispatched before this one's rows are read) donates this call's
    # state before the host sees it; a hook that wants every call's state, or a return target
    # that may stop the run at this call, needs the host to look first. Several processes
    # must send their collectives (the calls, the games' gather) in one order: the choice
    # depends on the clock (a timed checkpoint), so they never run ahead.
    may_run_ahead = (processes == 1 and ac.stop_at_return is None
                     and (on_update is None or isinstance(on_update, UpdateHook)))
    t_start = time.perf_counter()
    # The newest complete update (what a checkpoint saves); None while the state is donated
    # to an update in flight, so a failure never saves a half-made state.
    snap: Progress | None = progress()
    abandoned, nonfinite = False, None
    dispatched = updates  # the update counter after every call dispatched so far
    last_done = t_start  # when the host last saw a call's outputs

    def more() -> bool:
        return (dispatched < end and signals.received is None
                and not all(ledger.target_reached for m, ledger in enumerate(ledgers)
                            if m not in diverged))

    def run_ahead() -> bool:
        """Whether nothing needs the state of the call in flight (no hook or checkpoint due at
        its end, by count or time; no signal): the next call may then go before it is read."""
        return (may_run_ahead and more() and not due(dispatched)
                and (checkpointer is None or not checkpointer.time_due()))

    def dispatch() -> _Call:
        nonlocal state, runner, snap, dispatched
        with distributed.peer_check(dispatched, env_steps):
            k = _call_length(pace.next_length(), dispatched, end, due)
            if agree:
                k = int(distributed.broadcast_host(np.int32(k)))
            snap = None
            t0 = time.perf_counter()
            active = (np.asarray([m not in diverged for m in range(size)]) if population
                      else None)
            state, runner, metrics, eps = program.update(k, state, runner, active)
        dispatched += k
        return _Call(k, t0, metrics, eps, active)

    def finish(call: _Call, holds_state: bool) -> None:
        """Reads `call`'s outputs and records its updates; `holds_state`: the loop's state is
        this call's (nothing ran ahead), so it is the snapshot and goes to the hooks."""
        nonlocal updates, env_steps, snap, last_done
        with distributed.peer_check(updates, env_steps):
            # Polled, not a blocking device_get: a second signal abandons the call.
            metrics, eps = wait_ready((call.metrics, call.eps), signals.urgent)
            rows, games = program.split(jax.device_get(metrics), eps, call.k)
            t1 = time.perf_counter()
            # On the devices the call began when it was sent or when the one before it ended.
            seconds = t1 - max(call.t0, last_done)
            last_done = t1
            pace.observe(call.k, seconds)
            games = _gather_games(games, steps, len(names))
        records = []
        for per_member, done in zip(rows, games):
            updates += 1
            env_steps += steps * processes
            for m, (metrics_m, games_m) in enumerate(zip(per_member, done)):
                if call.active is not None and not call.active[m]:
                    continue  # frozen: its state did not move, its games are not its policy's
                episodes[m].add(games_m)
                scalars = {name: float(np.asarray(v)) for name, v in metrics_m.items()}
                scalars.update({
                    "sps": (env_steps - start_steps) / max(t1 - t_start, 1e-9),
                    "updates": float(updates), "policy_lag/mean": 0.0,
                    "policy_lag/max": 0.0, "time/learner_step_s": seconds / call.k,
                    **episodes[m].summary()})
                records.append((m, updates, env_steps, scalars))
        if holds_state:  # the call's state is its last update's: counters and state together
            snap = progress()
        stop, newly = None, False  # every row is logged, even after one that stops the run
        for i, (m, u, at, scalars) in enumerate(records):
            last = holds_state and not population and i >= len(records) - size
            try:
                ledgers[m].record(u, at, scalars, state if last else None)
            except NonFiniteError as e:
                if not population:
                    stop = stop or e
                elif m not in diverged:  # frozen from the next call on; the others go on
                    diverged[m] = {"update": u, "env_steps": at, "error": str(e)}
                    print(f"member {m} diverged: {e} It is frozen at its last good state; "
                          f"{size - len(diverged)} of {size} members go on.", flush=True)
                    _pass_console(loggers, m, diverged)
                    newly = True
        if holds_state and newly:  # the snapshot (what checkpoints save) records them too
            snap = progress()
        if stop is not None:
            raise stop
        if holds_state and population and checkpointer is not None:
            checkpointer.after_update(snap)

    with StopOnSignal() as signals:
        ahead: _Call | None = None
        try:
            while ahead is not None or more():
                call = ahead if ahead is not None else dispatch()
                ahead = dispatch() if run_ahead() else None
                try:
                    finish(call, holds_state=ahead is None)
                except (distributed.PeerLost, Abandoned):
                    raise
                except Exception:
                    # The call ahead holds the newest state: finish it too, so the final
                    # checkpoint is a complete update's (its rows are logged); the first
                    # error is the one reported.
                    if ahead is not None:
                        try:
                            finish(ahead, holds_state=True)
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
            for lg in loggers:
                lg.close()
            final = None
            if checkpointer is not None:
                final = checkpointer.close(snap)
    # After an abandoned call, the newest complete update's state was donated to it: none.
    members = ([{"episode_summary": e.summary(), "last_metrics": ledger.last_metrics,
                 "diverged": diverged.get(m)}
                for m, (e, ledger) in enumerate(zip(episodes, ledgers))] if population else None)
    result = TrainResult(snap.learner_state if snap is not None else None, env_steps, updates,
                         episodes[0].summary(), ledgers[0].last_metrics, signals.received,
                         final, abandoned, members)
    if population and len(diverged) == size and signals.received is None:
        nonfinite = NonFiniteError(f"every member diverged ({size} of {size}): "
                                   + "; ".join(f"member {m} at update {d['update']:,d}"
                                               for m, d in sorted(diverged.items())) + ".")
    if nonfinite is not None:
        # Its update may be a call later than the stop, when that call had already been sent.
        where = f" (update {updates:,d}, env step {env_steps:,d})" if final else ""
        raise NonFiniteError(f"{nonfinite} Checkpoint of the last good learner state{where}: "
                             f"{final or 'none (checkpoints off)'}.", result) from None
    if signals.received == "SIGINT":
        raise Interrupted(result)
    return result


def _pass_console(loggers: Sequence[MetricsLogger], m: int, diverged: dict) -> None:
    """The progress lines of a population come from one member's logger (member 0's): when
    that member diverges, the first member still training prints them from then on."""
    live = [i for i in range(len(loggers)) if i not in diverged]
    quiet = float("inf")
    if live and loggers[m].console_every_s < quiet:
        loggers[live[0]].console_every_s = loggers[m].console_every_s
        loggers[m].console_every_s = quiet


class _Call(NamedTuple):
    """A dispatched call: its length, when it was sent, its (future) outputs, and which
    members it updated (a population's; None for one agent)."""

    k: int
    t0: float
    metrics: dict
    eps: Any
    active: np.ndarray | None = None


class CallPace:
    """How many updates (1..K) the next fused call runs: as many as fit in `target_s`, judged
    from the last call's time per update. The first call runs one (it compiles, and its row
    comes at once); a call that compiled or met a loaded machine is followed by short ones
    until the time per update is back. The updates are the same whatever the lengths (each
    round of a call is one update: runtime.fused_rounds); only the host's per-call work and
    the wait of a signal or a metrics row change. `target_s` = 0: always K."""

    def __init__(self, fused: int, target_s: float) -> None:
        self.fused, self.target_s = fused, target_s
        self._per_update_s: float | None = None

    def observe(self, k: int, seconds: float) -> None:
        self._per_update_s = seconds / k

    def next_length(self) -> int:
        if self.fused == 1 or self.target_s <= 0:
            return self.fused
        if self._per_update_s is None:
            return 1
        return max(1, min(self.fused, int(self.target_s / max(self._per_update_s, 1e-9))))


def _call_length(fused: int, updates: int, end: int, due: Callable[[int], bool]) -> int:
    """Updates in the next call: up to the fused K, fewer when the run ends sooner or a hook
    (checkpoint, evaluation) is due sooner: the call then ends at that update, so the hook
    sees its own state. The fused program runs any length up to K (runtime.fused_rounds)."""
    for j in range(1, min(fused, end - updates)):
        if due(updates + j):
            return j
    return max(1, min(fused, end - updates))


def _gather_games(games: list[list[list[tuple]]], steps: int, num_metrics: int = 0
                  ) -> list[list[list[tuple]]]:
    """Every process's games of a call ([update][member] lists of (return, length,
    *metrics)), on every process, in one exchange (podracer.distributed); `steps` bounds one
    list (a step ends at most one game per env)."""
    flat = [g for per_member in games for g in per_member]
    every = iter(distributed.gather_episode_groups(flat, steps, num_metrics))
    return [[next(every) for _ in per_member] for per_member in games]
