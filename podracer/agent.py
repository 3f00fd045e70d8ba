"""The interface between the runtime and an algorithm, and the rollout it trains on.

An agent is four pure functions; the runtime jits `actor_step` on each actor device and wraps
`learn_step` in a `shard_map` over the learner mesh, so a new algorithm never touches sebulba/.

Recurrent agents (docs/recurrent.md) also give `initial_core_state`; the runtime then carries a
core state per environment, resets it where an episode starts, and stores the state each
rollout started from in `Rollout.core_state`. The runtime never looks inside that state.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

PyTree = Any


class Rollout(NamedTuple):
    """One actor thread's unroll, time-major, with the environment axis second.

    Step t is: the agent saw obs[t], took action[t] (with `extras[t]` from the actor, e.g. the
    behaviour log-prob), and the env answered reward[t], terminated[t], truncated[t] and obs[t+1].
    `valid[t]` is False on EnvPool's reset steps (obs[t] is a final observation and the action is
    ignored); losses mask those steps out.

    `core_state` (recurrent agents only; None otherwise) is the core state the actor used at
    step 0, after any reset, with a leading axis of 1 on every leaf ([1, B, ...]) so that the
    env axis is axis 1 as in every other field (the runtime splits axis 1 over learners). The
    learner re-runs the core from it; episodes start inside the unroll at the steps t >= 1
    with valid[t-1] False (see `core_resets` in agents/unroll.py).
    """

    obs: PyTree          # [T+1, B, ...] (last entry is the bootstrap observation)
    action: PyTree       # [T, B, ...]; a dict/tuple of arrays for mixed action spaces
    reward: jax.Array    # [T, B] raw env reward
    terminated: jax.Array  # [T, B] bool
    truncated: jax.Array   # [T, B] bool
    valid: jax.Array       # [T, B] bool
    extras: PyTree         # [T, B, ...] whatever actor_step returned as extras
    core_state: PyTree = None  # [1, B, ...] recurrent agents: the state used at step 0


@dataclasses.dataclass(frozen=True)
class Agent:
    """The four functions an algorithm provides, and two optional ones.

    init(key, obs) -> learner_state: builds parameters and optimiser state from example obs.
    actor_params(learner_state) -> what actors need (params, normaliser statistics, ...).
    actor_step(actor_params, obs, key) -> (action, extras): batched policy, jitted per device.
    learn_step(learner_state, rollout, axis_name) -> (learner_state, metrics): runs on each
        learner device on its shard of the batch; it must average gradients and metrics over
        `axis_name` itself (see agents/parallel.py), leaving state and metrics replicated.
    initial_core_state(num_envs) -> state (optional; recurrent agents): the core state at the
        start of an episode, leaves [num_envs, ...]. When set, actors call
        `actor_step(actor_params, obs, key, state) -> (action, extras, new_state)` with a state
        already reset (`reset_core_state`) for the envs whose episode starts at this step.
    greedy_step(actor_params, obs) -> action (optional): the policy's most likely action, for
        greedy evaluation only (the runtime never calls it); recurrent agents:
        `greedy_step(actor_params, obs, state) -> (action, new_state)`, state reset as above.
        Agents that leave it None are played greedily with the network `config.network`
        describes (agents/evaluation.py), or sampled with `actor_step`.
    """

    init: Callable[[jax.Array, PyTree], PyTree]
    actor_params: Callable[[PyTree], PyTree]
    actor_step: Callable[[PyTree, PyTree, jax.Array], tuple[jax.Array, PyTree]]
    learn_step: Callable[[PyTree, Rollout, str], tuple[PyTree, dict[str, jax.Array]]]
    initial_core_state: Callable[[int], PyTree] | None = None
    greedy_step: Callable[..., PyTree] | None = None

    @property
    def recurrent(self) -> bool:
        return self.initial_core_state is not None


def reset_core_state(state: PyTree, reset: jax.Array, initial: PyTree) -> PyTree:
    """`initial` in the envs where `reset` ([B] bool) is set, `state` elsewhere (leaves
    [B, ...]). Applied by the actor before the step where a new episode's first observation
    is seen, so the memory survives through the old episode's final observation (its value
    bootstraps a truncation) and never leaks into the next episode."""

    def one(s, z):
        return jnp.where(reset.reshape(reset.shape + (1,) * (s.ndim - 1)), z, s)

    return jax.tree.map(one, state, initial)
