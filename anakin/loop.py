"""The Anakin training loop on the host: one compiled call per update (or per
`updates_per_call` updates), then logging, episode statistics and checkpoints.

Everything per step happens on the devices (anakin/runtime.py); the host only reads the
update's metrics and the games finished in it. Logging, metric names, checkpoints and resume
are Sebulba's (sebulba/logging.py, sebulba/checkpoint.py): `sps`, `updates`, `episode/*`,
the agent's own metrics, `nonfinite/*`; `policy_lag/*` is always 0 (Anakin acts with the
parameters of the update it feeds).

Signals as in the Sebulba runtime, with the same handler (sebulba/signals.py): the first
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

from anakin import runtime
from sebulba import distributed
from sebulba.agent import Agent
from sebulba.checkpoint import Checkpointer, Progress
from sebulba.learner import NonFiniteError
from sebulba.logging import EpisodeStats, MetricsLogger
# The same result, interruption and signal handling as a Sebulba run.
from sebulba.runner import Interrupted, TrainResult
from sebulba.signals import Abandoned, StopOnSignal, wait_ready

PyTree = Any


def train(agent: Agent, env, ac: runtime.AnakinConfig, logger: MetricsLogger, *,
          checkpointer: Checkpointer | None = None, resume: Progress | None = None,
          on_update: Callable[[int, int, PyTree], None] | None = None) -> TrainResult:
    """Trains `agent` on the JAX-native `env` (anakin.envs) for `ac.planned_updates(...)`
    updates. `resume` continues a checkpointed run (fresh env streams, as Sebulba's actors);
    `checkpointer` saves on its schedule and at the end and is closed here. Ctrl-C raises
    `Interrupted` after the final checkpoint; a lost peer process raises
    `distributed.PeerLost`."""
    mesh = runtime.make_mesh(ac.device_ids)
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
    update = runtime.make_update_fn(agent, env, mesh, ac.unroll_length, ac.updates_per_call)

    episodes = EpisodeStats()
    if resume:
        episodes.load_state_dict(resume.episodes)
    updates, env_steps = start_updates, start_steps
    end = ac.planned_updates(start_updates, start_steps)
    k = ac.updates_per_call
    last: dict[str, float] = {}
    streak = total_nonfinite = 0
    t_start = time.perf_counter()
    # The newest complete update (what a checkpoint saves); None while the state is donated
    # to an update in flight, so a failure never saves a half-made state.
    snap: Progress | None = Progress(state, env_steps, updates, episodes.state_dict())
    abandoned = False
    with StopOnSignal() as signals:
        try:
            while updates < end and signals.received is None:
                if ac.stop_at_return is not None and episodes.best_mean >= ac.stop_at_return:
                    break
                if end - updates < k:  # the last call would overshoot: one update at a time
                    k = 1
                    update = runtime.make_update_fn(agent, env, mesh, ac.unroll_length, 1)
                t0 = time.perf_counter()
                snap = None
                steps = k * ac.unroll_length * ac.num_envs
                try:
                    state, runner, metrics, eps = update(state, runner)
                    # Polled, not a blocking device_get: a second signal abandons the call.
                    metrics, eps = wait_ready((metrics, eps), signals.urgent)
                    metrics = jax.device_get(metrics)
                    games = runtime.local_episodes(eps)
                    t1 = time.perf_counter()
                    episodes.add(distributed.gather_episodes(games, steps))
                except Exception as e:
                    lost = distributed.lost_peer(e)
                    if lost is None:
                        raise
                    raise distributed.PeerLost(
                        f"lost {lost} during update {updates + 1:,d} (env step "
                        f"{env_steps:,d}); that update's learner state is incomplete and is "
                        f"not saved.") from e
                updates += k
                env_steps += steps * jax.process_count()
                scalars = {name: float(np.asarray(v)) for name, v in metrics.items()}
                skipped = scalars.get("nonfinite/skipped", 0.0)
                streak = streak + 1 if skipped else 0
                total_nonfinite += int(skipped > 0)
                scalars.update({
                    "sps": (env_steps - start_steps) / max(time.perf_counter() - t_start, 1e-9),
                    "updates": float(updates), "policy_lag/mean": 0.0, "policy_lag/max": 0.0,
                    "time/learner_step_s": (t1 - t0) / k, "nonfinite/total": float(
                        total_nonfinite), **episodes.summary()})
                last = scalars
                reached = (ac.stop_at_return is not None
                           and episodes.best_mean >= ac.stop_at_return)
                logger.write(env_steps, scalars, force_print=updates >= end or reached)
                snap = progress = Progress(state, env_steps, updates, episodes.state_dict())
                if streak >= ac.max_nonfinite_updates:
                    raise NonFiniteError(f"{streak} non-finite updates in a row "
                                         f"(max_nonfinite_updates={ac.max_nonfinite_updates}); "
                                         f"stopped at env step {env_steps:,d}.")
                if checkpointer is not None:
                    checkpointer.after_update(progress)
                if on_update is not None:
                    on_update(updates, env_steps, state)
        except Abandoned:
            abandoned = True
        finally:
            logger.close()
            final = None
            if checkpointer is not None:
                final = checkpointer.close(snap)
    # After an abandoned call, the newest complete update's state was donated to it: none.
    result = TrainResult(snap.learner_state if snap is not None else None, env_steps, updates,
                         episodes.summary(), last, signals.received, final, abandoned)
    if signals.received == "SIGINT":
        raise Interrupted(result)
    return result
