"""Curricula: where training stands (`TrainingProgress`) and the value of a scheduled
randomised range there.

A schedule is written in env.randomize (podracer/scenarios.py) as a start and an end of one
distribution over a length of training:

    vehicles_density=uniform(0.5, 1.0) -> uniform(0.5, 2.0) over 2000000 env_steps

Each argument moves linearly from its start to its end value over the first N env steps (or
updates) of the run, then stays at its end; `args_at` is that rule. The runtimes hand the
progress to the envs that read it, for their resets: on Anakin the runner counts updates in the
compiled program (anakin/actor.py), on Sebulba the actor hands the version of the parameters
acting (sebulba/actor.py). An evaluation plays the schedule's end (progress None), the task
the curriculum leads to.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

UNITS = ("env_steps", "updates")


class TrainingProgress(NamedTuple):
    """How far training is, what an env's own curriculum reads (numbers on the host, arrays
    inside a compiled step): agent steps over all processes and learner updates done so far,
    and the games finished so far with the window the run logs (its last 100 games): their
    mean true return and each env.episode_metrics mean by name (e.g. "crashed"), NaN where no
    game reported it. The games are those logged before the parameters now acting were
    published (Sebulba) or before the current call was sent (Anakin): a step or a call behind."""

    env_steps: Any
    updates: Any
    return_mean: Any = math.nan
    games: Any = 0
    metrics: Any = None  # {metric name: window mean}; None when the runtime gave none


def fraction(over: float, unit: str, progress: TrainingProgress) -> Any:
    """How much of a schedule of length `over` (in `unit`, one of UNITS) is done at
    `progress`: 0 at the start, 1 from `over` on (a float for host numbers, a JAX array for
    JAX ones: traceable)."""
    done = progress.env_steps if unit == "env_steps" else progress.updates
    if isinstance(done, (int, float, np.integer, np.floating)):
        return min(max(float(done) / over, 0.0), 1.0)
    import jax.numpy as jnp
    return jnp.clip(jnp.asarray(done, jnp.float32) / over, 0.0, 1.0)


def args_at(start: tuple, end: tuple, over: float, unit: str,
            progress: TrainingProgress | None) -> tuple:
    """A schedule's distribution arguments at `progress`: each moves linearly from `start` to
    `end` over `over` `unit`s; `end` when progress is None (an evaluation: the target task)."""
    if progress is None:
        return tuple(end)
    f = fraction(over, unit, progress)
    return tuple(a + (b - a) * f for a, b in zip(start, end))
