"""The non-finite guard both runtimes run inside their compiled update (sebulba/learner.py,
anakin/learner.py): an update whose new learner state is not finite is skipped, on every
device alike, and flagged in the metrics for the loop to count (podracer/ledger.py)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from podracer import collectives
from podracer.agent import PyTree


def all_finite(tree: PyTree) -> jax.Array:
    """True when every floating-point leaf of `tree` is finite (keys and ints are skipped).

    Leaves may be Python numbers (an agent's metric from a constant schedule) or arrays."""
    leaves = [jnp.asarray(x) for x in jax.tree.leaves(tree)]
    checks = [jnp.all(jnp.isfinite(x)) for x in leaves if jnp.issubdtype(x.dtype, jnp.inexact)]
    return jnp.all(jnp.stack(checks)) if checks else jnp.asarray(True)


def keep_finite(old_state: PyTree, new_state: PyTree, metrics: dict, axis_name: str
                ) -> tuple[PyTree, dict]:
    """Algorithm-agnostic guard: keeps the floating-point leaves of `old_state` (parameters,
    optimizer moments, statistics) unless every floating-point leaf of the new learner state is
    finite. One NaN gradient would otherwise poison the parameters for good; a skipped update
    costs one batch. The metrics are left out of the decision: a diagnostic that is non-finite
    on its own (a ratio of two empty sums) says nothing about the state, and is reported as it
    is, NaN and all.

    Integer and key leaves (update counters, the optimizer's step count, RNG keys) advance as
    the update made them, skipped or not: they cannot be non-finite, and the learning-rate
    schedule counts batches, as the loop's update counter does. Were they kept, a resumed run
    would re-stretch its schedule from the loop's counter while optax's count lagged it by the
    skipped updates.

    Selecting inside the compiled step keeps one program for both outcomes. The flag is
    reduced with pmin over the learner axis, so every device takes the same branch even if
    only one saw the NaN (replicas must never diverge). Cost: one pass over the state.
    """
    metrics = jax.tree.map(jnp.asarray, metrics)  # shard_map outputs must be arrays
    ok = collectives.pmin(all_finite(new_state).astype(jnp.int32), axis_name) > 0

    def pick(old, new):
        dtype = new.dtype if hasattr(new, "dtype") else jnp.asarray(new).dtype
        if not jax.dtypes.issubdtype(dtype, jnp.inexact):
            return new  # counters and keys: as the update made them
        return jnp.where(ok, new, old)
    state = jax.tree.map(pick, old_state, new_state)
    return state, {**metrics, "nonfinite/skipped": 1.0 - ok.astype(jnp.float32)}


class NonFiniteError(RuntimeError):
    """Too many non-finite updates in a row; the learner state is the last good one. Raised
    by a runtime's loop, it carries the run's `result` (podracer.results.TrainResult) for the
    caller to summarise."""

    def __init__(self, message: str, result=None) -> None:
        super().__init__(message)
        self.result = result
