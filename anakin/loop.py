"""The Anakin training loop on the host: one compiled call per update (or per
`updates_per_call` updates), then logging, episode statistics and checkpoints.

Everything per step happens on the devices (anakin/runtime.py); the host only reads the
updates' metrics and the games finished in them. Logging, metric names, checkpoints and resume
are the core's, as for Sebulba (podracer/ledger.py, logging.py, checkpoint.py): `sps`,
`updates`, `episode/*`, the agent's own metrics, `nonfinite/*`; `policy_lag/*` is always 0
(Anakin acts with the parameters of the update it feeds).

A fused call (`updates_per_call` = K > 1) is accounted for update by update, as if each had run
alone: each gets its own metrics row, its own games, its own non-finite count. A call ends
early at an update where a checkpoint or evaluation is due by count (`Ledger.due`), running the
updates up to it one per call, so the hook sees that update's own state.

Signals as in the Sebulba runtime, with the same handler (podracer/signals.py): the first
SIGINT / SIGTERM stops after the call in flight and the final checkpoint holds it; then SIGTERM
(pre-emption) returns normally and SIGINT raises `Interrupted` carrying the TrainResult. A
second signal abandons the call in flight (its state was donated to it: the final checkpoint is
skipped, `TrainResult.abandoned` is set, and the caller ends the process at once, since a normal
exit would wait for the computation). The loop polls the call's outputs instead of blocking in
jax.device_get, so the handler runs while the devices work; if the main thread is inside a
compilation, the watcher ends the process a few seconds after the second signal (status
128 + signal number). A collective that fails because another process died raises
`distributed.PeerLost` (nothing of that update is saved), as in the Sebulba runtime.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import jax
import numpy as np
from jax.sharding import Mesh

from anakin import runtime
from podracer import distributed
from podracer.agent import Agent
from podracer.checkpoint import Checkpointer, Progress
from podracer.finite import NonFiniteError
from podracer.ledger import Ledger
from podracer.logging import EpisodeStats, MetricsLogger
from podracer.results import Interrupted, TrainResult
from podracer.signals import Abandoned, StopOnSignal, wait_ready

PyTree = Any


def train(agent: Agent, env, ac: runtime.AnakinConfig, logger: MetricsLogger, *,
          checkpointer: Checkpointer | None = None, resume: Progress | None = None,
          on_update: Callable[[int, int, PyTree], None] | None = None,
          mesh: Mesh | None = None) -> TrainResult:
    """Trains `agent` on the JAX-native `env` (anakin.envs) for the run's planned updates.
    `resume` continues a checkpointed run (fresh env streams, as Sebulba's actors);
    `checkpointer` saves on its schedule and at the end and is closed here. `on_update(update,
    env_steps, state)` runs after every update whose state the loop holds (each update, or
    each call's last with K > 1); a hook with `due(update)` (podracer.ledger.UpdateHook, the
    evaluator) gets exactly its updates. Ctrl-C raises `Interrupted` after the final
    checkpoint; a lost peer process raises `distributed.PeerLost`. `mesh`: the devices' mesh,
    if the caller has built it already (for `ac.learner_device_ids`)."""
    mesh = mesh if mesh is not None else runtime.make_mesh(ac.learner_device_ids)
    processes = jax.process_count()
    plan = ac.plan(processes)
    start_updates = resume.updates if resume else 0
    start_steps = resume.env_steps if resume else 0
    if resume is None:
        example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
        state = agent.init(jax.random.key(ac.seed), example)
    else:
        state = resume.learner_state
    state = runtime.place_replicated(state, mesh)
    runner = runtime.init_runner(agent, env, runtime.runner_key(ac.seed, start_updates),
                                 ac.num_envs)
    runner = runtime.place_runner(runner, mesh)
    fused = {1: runtime.make_update_fn(agent, env, mesh, ac.unroll_length, 1)}
    if ac.updates_per_call > 1:
        fused[ac.updates_per_call] = runtime.make_update_fn(
            agent, env, mesh, ac.unroll_length, ac.updates_per_call)

    episodes = EpisodeStats()
    if resume:
        episodes.load_state_dict(resume.episodes)
    updates, env_steps = start_updates, start_steps
    end = plan.planned_updates(start_updates, start_steps)
    ledger = Ledger(logger, episodes, end_update=end,
                    max_nonfinite_updates=ac.max_nonfinite_updates,
                    stop_at_return=ac.stop_at_return, checkpointer=checkpointer,
                    on_update=on_update)
    steps = ac.unroll_length * ac.num_envs  # one update's steps on this process
    t_start = time.perf_counter()
    # The newest complete update (what a checkpoint saves); None while the state is donated
    # to an update in flight, so a failure never saves a half-made state.
    snap: Progress | None = Progress(state, env_steps, updates, episodes.state_dict())
    abandoned, nonfinite = False, None
    with StopOnSignal() as signals:
        try:
            while (updates < end and signals.received is None
                   and not ledger.target_reached):
                k = _call_length(ac.updates_per_call, updates, end, ledger)
                t0 = time.perf_counter()
                snap = None
                try:
                    state, runner, metrics, eps = fused[k](state, runner)
                    # Polled, not a blocking device_get: a second signal abandons the call.
                    metrics, eps = wait_ready((metrics, eps), signals.urgent)
                    metrics = _split(jax.device_get(metrics), k)
                    t1 = time.perf_counter()
                    games = [distributed.gather_episodes(g, steps)
                             for g in runtime.local_episodes(eps)]
                except Exception as e:
                    lost = distributed.lost_peer(e)
                    if lost is None:
                        raise
                    raise distributed.PeerLost(
                        f"lost {lost} during update {updates + 1:,d} (env step "
                        f"{env_steps:,d}); that update's learner state is incomplete and is "
                        f"not saved.") from e
                rows = []
                for m, done in zip(metrics, games):
                    updates += 1
                    env_steps += steps * processes
                    episodes.add(done)
                    scalars = {name: float(np.asarray(v)) for name, v in m.items()}
                    scalars.update({
                        "sps": (env_steps - start_steps) / max(
                            time.perf_counter() - t_start, 1e-9),
                        "updates": float(updates), "policy_lag/mean": 0.0,
                        "policy_lag/max": 0.0, "time/learner_step_s": (t1 - t0) / k,
                        **episodes.summary()})
                    rows.append((updates, env_steps, scalars))
                # The call's state is its last update's: counters and state belong together.
                snap = Progress(state, env_steps, updates, episodes.state_dict())
                for i, (u, at, scalars) in enumerate(rows):
                    ledger.record(u, at, scalars, state if i == len(rows) - 1 else None)
        except NonFiniteError as e:  # re-raised below, once the last good state is saved
            nonfinite = e
        except Abandoned:
            abandoned = True
        finally:
            logger.close()
            final = None
            if checkpointer is not None:
                final = checkpointer.close(snap)
    if nonfinite is not None:
        raise NonFiniteError(f"{nonfinite} Checkpoint of the last good learner state: "
                             f"{final or 'none (checkpoints off)'}.") from None
    # After an abandoned call, the newest complete update's state was donated to it: none.
    result = TrainResult(snap.learner_state if snap is not None else None, env_steps, updates,
                         episodes.summary(), ledger.last_metrics, signals.received, final,
                         abandoned)
    if signals.received == "SIGINT":
        raise Interrupted(result)
    return result


def _call_length(fused: int, updates: int, end: int, ledger: Ledger) -> int:
    """Updates in the next call: the fused K, or 1 when fewer than K are left or a hook is due
    before the K-th (the updates up to it then run one per call, so it sees its own state)."""
    if fused == 1 or end - updates < fused:
        return 1
    if any(ledger.due(updates + j) for j in range(1, fused)):
        return 1
    return fused


def _split(metrics: dict, k: int) -> list[dict]:
    """Each update's metrics of a call of `k` (host copies; a fused call stacks them)."""
    if k == 1:
        return [metrics]
    return [{name: v[i] for name, v in metrics.items()} for i in range(k)]
