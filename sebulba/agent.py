"""The interface between the runtime and an algorithm, and the rollout it trains on.

An agent is four pure functions; the runtime jits `actor_step` on each actor device and wraps
`learn_step` in a `shard_map` over the learner mesh, so a new algorithm never touches sebulba/.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

import jax

PyTree = Any


class Rollout(NamedTuple):
    """One actor thread's unroll, time-major, with the environment axis second.

    Step t is: the agent saw obs[t], took action[t] (with `extras[t]` from the actor, e.g. the
    behaviour log-prob), and the env answered reward[t], terminated[t], truncated[t] and obs[t+1].
    `valid[t]` is False on EnvPool's reset steps (obs[t] is a final observation and the action is
    ignored); losses mask those steps out.
    """

    obs: PyTree          # [T+1, B, ...] (last entry is the bootstrap observation)
    action: PyTree       # [T, B, ...]; a dict/tuple of arrays for mixed action spaces
    reward: jax.Array    # [T, B] raw env reward
    terminated: jax.Array  # [T, B] bool
    truncated: jax.Array   # [T, B] bool
    valid: jax.Array       # [T, B] bool
    extras: PyTree         # [T, B, ...] whatever actor_step returned as extras


@dataclasses.dataclass(frozen=True)
class Agent:
    """The four functions an algorithm provides.

    init(key, obs) -> learner_state: builds parameters and optimiser state from example obs.
    actor_params(learner_state) -> what actors need (params, normaliser statistics, ...).
    actor_step(actor_params, obs, key) -> (action, extras): batched policy, jitted per device.
    learn_step(learner_state, rollout, axis_name) -> (learner_state, metrics): runs on each
        learner device on its shard of the batch; it must average gradients and metrics over
        `axis_name` itself (see agents/parallel.py), leaving state and metrics replicated.
    """

    init: Callable[[jax.Array, PyTree], PyTree]
    actor_params: Callable[[PyTree], PyTree]
    actor_step: Callable[[PyTree, PyTree, jax.Array], tuple[jax.Array, PyTree]]
    learn_step: Callable[[PyTree, Rollout, str], tuple[PyTree, dict[str, jax.Array]]]
