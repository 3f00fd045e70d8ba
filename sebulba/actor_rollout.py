"""A rollout under construction (`RolloutSteps`), its assembly into one `Rollout` on the actor
device (`assemble`), and the message that ships it to the learner (`RolloutMessage`).

The loop appends each half-step's device arrays (observation, action, extras) and writes the
host fields ([T, B] numpy: reward, terminated, truncated, valid) in place. One jitted call per
rollout stacks the device arrays, joins the half-pools on the env axis (A's envs first) and
copies the host fields in; the bootstrap observation of a rollout is the next rollout's first
observation, already on the device.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agent import Rollout


@dataclasses.dataclass
class RolloutMessage:
    """What an actor hands the learner: the sharded rollout plus host-side bookkeeping."""

    rollout: Rollout
    param_version: int          # version of the params that produced the rollout
    env_steps: int              # T * B agent steps in this rollout
    episodes: list[tuple]       # (return, length, *metrics) of games finished in it
    timings: dict[str, float]   # seconds spent per stage in this rollout
    actor_id: int


class RolloutSteps:
    """One rollout under construction: device lists per half, host arrays [T, B]."""

    def __init__(self, T: int, B: int, halves: int) -> None:
        self.obs: list[list] = [[] for _ in range(halves)]
        self.action: list[list] = [[] for _ in range(halves)]
        self.extras: list[list] = [[] for _ in range(halves)]
        self.first_state: list = [None] * halves
        self.reward = np.zeros((T, B), np.float32)
        self.terminated, self.truncated, self.valid = (np.zeros((T, B), bool) for _ in range(3))
        self.episodes: list[tuple] = []


# Steps are stacked in chunks: XLA's compile time grows with the number of operands, and one
# program stacking T=2048 steps (the MuJoCo PPO setup) took minutes to compile on CPU; chunks of
# 64 compile in about a second, and the per-rollout cost stays a few dispatches.
_STACK_CHUNK = 64


@jax.jit
def _stack(xs):
    return jax.tree.map(lambda *x: jnp.stack(x), *xs)


@jax.jit
def _concat(chunks):
    return jax.tree.map(lambda *x: jnp.concatenate(x), *chunks)


@jax.jit
def _concat_envs(parts):
    """Half-pools' [T, n_h, ...] pytrees -> one [T, B, ...] (A's envs first)."""
    return jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *parts)


@jax.jit
def _first_state(parts):
    """Half-pools' [n_h, ...] core states -> [1, B, ...]: the leading time axis of 1 lets one
    env-axis-1 sharding split every field of the rollout."""
    return jax.tree.map(lambda *x: jnp.concatenate(x)[None], *parts)


def _stack_steps(xs: list) -> Any:
    """A list of per-step pytrees [B, ...] -> one pytree [len, B, ...] on the same device."""
    if len(xs) <= _STACK_CHUNK:
        return _stack(xs)
    return _concat([_stack(xs[i:i + _STACK_CHUNK]) for i in range(0, len(xs), _STACK_CHUNK)])


def _stack_halves(per_half: list[list]) -> Any:
    parts = [_stack_steps(xs) for xs in per_half]
    return parts[0] if len(parts) == 1 else _concat_envs(parts)


@jax.jit
def _assemble_rollout(obs, action, extras, host, first_state) -> Rollout:
    """The whole Rollout in one program (T + 1 <= _STACK_CHUNK): per-half lists of per-step
    device arrays are stacked and the halves joined on the env axis; the host fields
    ([T, B] numpy, passed as arguments) are copied in by the same call."""

    def join(per_half):
        parts = [jax.tree.map(lambda *x: jnp.stack(x), *xs) for xs in per_half]
        return jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *parts)

    core = None
    if first_state is not None:
        core = jax.tree.map(lambda *x: jnp.concatenate(x)[None], *first_state)
    reward, terminated, truncated, valid = host
    return Rollout(obs=join(obs), action=join(action), reward=reward, terminated=terminated,
                   truncated=truncated, valid=valid, extras=join(extras), core_state=core)


def assemble(steps: RolloutSteps, device: jax.Device) -> Rollout:
    """One Rollout on the actor `device`, env axis = [half A's envs, half B's envs]."""
    host = (steps.reward, steps.terminated, steps.truncated, steps.valid)
    first = None if steps.first_state[0] is None else steps.first_state
    if len(steps.obs[0]) <= _STACK_CHUNK:  # the usual T: one dispatch for the rollout
        return _assemble_rollout(steps.obs, steps.action, steps.extras, host, first)
    core = None if first is None else _first_state(first)
    host = jax.device_put(host, device)
    return Rollout(obs=_stack_halves(steps.obs), action=_stack_halves(steps.action),
                   reward=host[0], terminated=host[1], truncated=host[2], valid=host[3],
                   extras=_stack_halves(steps.extras), core_state=core)
