"""Gradient and metric averaging over the learner axis, written once for every agent.

Trap this guards against: inside `shard_map`, the gradient of a loss on local data with respect
to *replicated* parameters comes back already summed over the axis (the transpose of the
implicit broadcast is a psum), so a further `pmean` would give an N-times update. We mark the
parameters as device-varying first, so each device gets its local gradient, then take one
explicit mean. tests/sebulba/test_learner.py pins "N learners == one device on the whole batch".
"""
from __future__ import annotations

from typing import Any, Callable

import jax

from podracer import collectives


def mean_grad(loss_fn: Callable[..., tuple[jax.Array, Any]], params: Any, *args: Any,
              axis_name: str) -> tuple[Any, Any]:
    """Returns (mean over devices of d loss / d params, aux) for `loss_fn(params, *args)`."""
    local = jax.lax.pcast(params, axis_name, to="varying")
    grads, aux = jax.grad(loss_fn, has_aux=True)(local, *args)
    return collectives.pmean(grads, axis_name), aux


def mean_metrics(metrics: Any, axis_name: str) -> Any:
    """The mean over the learner axis of a pytree of metrics (a dict, or PPO's one vector)."""
    return collectives.pmean(metrics, axis_name)
