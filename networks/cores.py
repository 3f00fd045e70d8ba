"""Recurrent cores: an LSTM that sits between the torso and the heads.

A core is unrolled over time-major sequences [T, B, H] with per-step reset flags [T, B]: where
`reset[t, b]` is True the carry of env b is put back to the initial (zero) state *before* step
t is processed. One code path serves both users, so they cannot drift apart:
- actors step it with T = 1 (the runtime has already reset the carry of envs whose episode
  starts now, see podracer/agent.reset_core_state, and passes reset = False);
- learners unroll it over a whole rollout from the state the actor stored for step 0,
  resetting at episode boundaries inside the unroll (agents/unroll.core_resets).
The initial state is all zeros: resetting "to the initial state" and "to zeros" are the same.
"""
from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

LSTMState = tuple[jax.Array, jax.Array]  # (c, h), each [B, size], float32


def lstm_initial_state(batch: int, size: int) -> LSTMState:
    """Zeros (c, h) [batch, size]: the state at the start of every episode."""
    zeros = jnp.zeros((batch, size), jnp.float32)
    return zeros, zeros


def zero_where(reset: jax.Array, state: Any) -> Any:
    """Zeroes every leaf of `state` ([B, ...]) in the rows where `reset` ([B] bool) is set."""

    def one(x):
        mask = reset.reshape(reset.shape + (1,) * (x.ndim - reset.ndim))
        return jnp.where(mask, jnp.zeros_like(x), x)

    return jax.tree.map(one, state)


class _ResetLSTMStep(nn.Module):
    """One LSTM step that first zeroes the carry of the rows whose episode starts here."""

    size: int

    @nn.compact
    def __call__(self, carry: LSTMState, inputs: tuple[jax.Array, jax.Array]):
        x, reset = inputs
        carry = zero_where(reset, carry)
        return nn.OptimizedLSTMCell(self.size, name="cell")(carry, x)


class LSTMCore(nn.Module):
    """An LSTM (flax OptimizedLSTMCell) unrolled with `nn.scan` over [T, B, H] inputs."""

    size: int

    def initial_state(self, batch: int) -> LSTMState:
        return lstm_initial_state(batch, self.size)

    @nn.compact
    def __call__(self, state: LSTMState, x: jax.Array, reset: jax.Array
                 ) -> tuple[LSTMState, jax.Array]:
        """(final state, outputs [T, B, size]) for inputs x [T, B, H] from `state` [B, size]."""
        chex.assert_rank(x, 3)
        chex.assert_shape(reset, x.shape[:2])
        chex.assert_shape(state, (x.shape[1], self.size))
        x = x.astype(jnp.float32)
        if x.shape[0] == 1:
            # An actor's step: the one step itself, no loop. The parameters are the same
            # (`lstm/cell`), and the graph has no scan for an exporter (ONNX) to lower.
            state, out = _ResetLSTMStep(self.size, name="lstm")(state, (x[0], reset[0]))
            return state, out[None]
        scan = nn.scan(_ResetLSTMStep, variable_broadcast="params",
                       split_rngs={"params": False}, in_axes=0, out_axes=0)
        return scan(self.size, name="lstm")(state, (x, reset))
