"""Episode metrics reduced on the device, inside Anakin's compiled program.

The same reductions as the host's `podracer.episode_metrics.EpisodeAccumulator` (Sebulba's
actors and evaluation): each metric of env.episode_metrics (`max`, `mean`, `sum`, `last` of an
info field) over the valid steps of a game (not the reset step of the one-step-late autoreset),
NaN for a game no valid step of which reported it. Here every step reports every field (a JAX
env's info has one structure), so the count is the game's valid steps; it is kept anyway, so
the two runtimes compute the same thing the same way.

Per env (the runtime `vmap`s these): `Totals` holds [M] running values and counts;
`values(info)` reads the M fields of one step's info; `add` folds a step in; `result` is the
game's metrics at its end. With no metrics (M = 0) every array is empty and costs nothing.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from podracer.episode_metrics import EpisodeMetric


class Totals(NamedTuple):
    """One env's running reductions of the metrics over its current game ([M] each)."""

    value: jax.Array  # float32: the max, last value or sum so far
    count: jax.Array  # int32: the valid steps that reported each field


def zeros(num_metrics: int, batch: tuple[int, ...] = ()) -> Totals:
    """Fresh totals ([*batch, M])."""
    return Totals(jnp.zeros((*batch, num_metrics), jnp.float32),
                  jnp.zeros((*batch, num_metrics), jnp.int32))


def field(info: Mapping[str, Any], name: str) -> jax.Array:
    """The dotted field `name` of one env's info ("rewards.crash" is info["rewards"]["crash"])."""
    node: Any = info
    for key in name.split("."):
        node = node[key]
    return node


def values(info: Mapping[str, Any] | None, metrics: Sequence[EpisodeMetric]) -> jax.Array:
    """[M] float32: the metrics' fields in one env's info of one step."""
    if not metrics:
        return jnp.zeros((0,), jnp.float32)
    return jnp.stack([jnp.asarray(field(info, m.field), jnp.float32).reshape(())
                      for m in metrics])


def add(totals: Totals, x: jax.Array, valid: jax.Array,
        metrics: Sequence[EpisodeMetric]) -> Totals:
    """`totals` with one step's values `x` [M] folded in where the step is `valid` (a game's)."""
    kind = np.array([m.reduction for m in metrics], dtype=object)
    is_max, is_last = jnp.asarray(kind == "max", bool), jnp.asarray(kind == "last", bool)
    v, c = totals
    first = c == 0
    folded = jnp.where(is_max, jnp.where(first, x, jnp.maximum(v, x)),
                       jnp.where(is_last, x, v + x))  # sum and mean both sum
    return Totals(jnp.where(valid, folded, v), c + valid.astype(jnp.int32))


def result(totals: Totals, metrics: Sequence[EpisodeMetric]) -> jax.Array:
    """[M] float32: the game's metrics from its totals (a mean divides by the count; NaN where
    no step reported the field)."""
    is_mean = jnp.asarray(np.array([m.reduction == "mean" for m in metrics], bool))
    v, c = totals
    out = jnp.where(is_mean, v / jnp.maximum(c, 1), v)
    return jnp.where(c > 0, out, jnp.nan)


def restart(totals: Totals, over: jax.Array) -> Totals:
    """The totals of an env whose game ended (`over`) emptied for its next game."""
    return Totals(jnp.where(over, 0.0, totals.value), jnp.where(over, 0, totals.count))
