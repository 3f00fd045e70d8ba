"""Running the network over a rollout in the learner, recurrent cores included.

The agents' losses read the same for feed-forward and recurrent networks (networks.is_recurrent;
docs/recurrent.md): `apply_time_major` runs a feed-forward network on all [T, B] observations
as one batch, and re-runs a recurrent core over the rollout from the state the actor stored
(`Rollout.core_state`), resetting it where episodes start (`core_resets`), so the learner
reproduces the actor's outputs exactly.
"""
from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from networks import is_recurrent
from podracer.agent import reset_core_state


def add_time(tree: Any) -> Any:
    """[B, ...] -> [1, B, ...] on every leaf (one step of a time-major unroll)."""
    return jax.tree.map(lambda x: jnp.asarray(x)[None], tree)


def drop_time(tree: Any) -> Any:
    """[1, B, ...] -> [B, ...] on every leaf."""
    return jax.tree.map(lambda x: x[0], tree)


def drop_last(tree: Any) -> Any:
    """[T+1, ...] -> [T, ...] on every leaf (network outputs on obs_0..obs_{T-1})."""
    return jax.tree.map(lambda x: x[:-1], tree)


def zero_state_where(network: nn.Module, core_state, reset: jax.Array):
    """The network's initial state where `reset` [B] is set, `core_state` elsewhere."""
    return reset_core_state(core_state, reset, network.initial_state(reset.shape[0]))


def core_resets(valid: jax.Array, length: int) -> jax.Array:
    """[length, B] reset flags for a learner unroll of obs_0..obs_{length-1} that starts from
    the stored (already reset) state: reset[0] = False, reset[t] = not valid[t-1] (step t-1 was
    an env reset step, so obs_t is a new episode's first observation)."""
    chex.assert_rank(valid, 2)
    first = jnp.zeros((1, valid.shape[1]), bool)
    return jnp.concatenate([first, ~valid[:length - 1]], axis=0)


def apply_time_major(network: nn.Module, params, obs, core_state=None, valid=None):
    """Runs the network on [T, B, ...] observations: feed-forward as one [T*B, ...] batch;
    recurrent as an unroll from `core_state` ([1, B, ...] leaves, as stored in the Rollout)
    with episode resets from `valid` ([>= T-1, B], see `core_resets`)."""
    if is_recurrent(network):
        if core_state is None or valid is None:
            raise ValueError("a recurrent network needs the rollout's core_state and valid "
                             "flags to be unrolled (was the Rollout made by a recurrent "
                             "agent's actors?).")
        length = jax.tree.leaves(obs)[0].shape[0]
        out, _ = network.apply(params, obs, drop_time(core_state),
                               core_resets(valid, length))
        return out
    lead = jax.tree.leaves(obs)[0].shape[:2]
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), obs)
    outputs = network.apply(params, flat)
    return jax.tree.map(lambda x: x.reshape(lead + x.shape[1:]), outputs)
