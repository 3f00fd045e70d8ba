"""The actors' side of the agents: the parameters shipped to actors and the sampling step.

Acting samples from the network's action distribution (`network.dist`, networks/
distributions.py) and keeps the behaviour log-prob `logp` of the sampled action in the extras:
it is all V-trace and PPO's importance ratios need, whatever the action space. PPO also keeps
the behaviour distribution's parameters (`policy`, for its KL terms) and the value.

Actors normalise observations with the statistics shipped with the parameters (`ActorParams`,
agents/normalization.py). Recurrent networks are stepped one time step at a time from the core
state the runtime carries (podracer/agent.py); the learner re-runs them with agents/unroll.py.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import normalization as norm_lib
from agents.unroll import add_time, drop_time
from networks import is_recurrent
from networks.distributions import allows_nothing
from podracer import legal


class ActorParams(NamedTuple):
    """What the learner ships to the actors after each update."""

    params: Any
    obs_norm: norm_lib.ObsNorm | None  # the observation normaliser; None: raw observations


def actor_params(params: Any, norm: norm_lib.NormState, cfg) -> ActorParams:
    return ActorParams(params, norm_lib.ObsNorm(norm.obs, cfg.obs_clip) if cfg.obs_norm else None)


def actor_obs(ap: ActorParams, obs: Any) -> Any:
    """The observations the network sees: normalised as the learner's statistics say."""
    return obs if ap.obs_norm is None else ap.obs_norm(obs)


def init_params(network: nn.Module, key: jax.Array, obs: Any) -> Any:
    """Network parameters from example observations [B, ...], recurrent or not."""
    if not is_recurrent(network):
        return network.init(key, obs)
    batch = jax.tree.leaves(obs)[0].shape[0]
    return network.init(key, add_time(obs), network.initial_state(batch),
                        jnp.zeros((1, batch), bool))


def initial_core_state(network: nn.Module):
    """`Agent.initial_core_state` for `network`: its zero state, or None (feed-forward)."""
    return network.initial_state if is_recurrent(network) else None


def step_network(network: nn.Module, params, obs, core_state=None):
    """One batched step: ((policy, value), new core state); the state is None and passed
    through for feed-forward networks. The caller has already reset the state where an
    episode starts (podracer.agent.reset_core_state)."""
    if core_state is None:
        return network.apply(params, obs), None
    batch = jax.tree.leaves(obs)[0].shape[0]
    out, core_state = network.apply(params, add_time(obs), core_state,
                                    jnp.zeros((1, batch), bool))
    return drop_time(out), core_state


def make_actor_step(network: nn.Module, cfg, keep_policy: bool = False,
                    keep_value: bool = False):
    """actor_step(ActorParams, obs, key) -> (action, {"logp", ["policy"], ["value"]}), or for
    recurrent networks actor_step(ActorParams, obs, key, core_state) -> (action, extras,
    core_state) (the runtime's recurrent signature, podracer/agent.py)."""
    dist = network.dist

    def step(ap: ActorParams, obs, key: jax.Array, core_state):
        (policy, value), core_state = step_network(network, ap.params,
                                                   actor_obs(ap, obs), core_state)
        action = dist.sample(policy, key)
        # The learner recomputes log-probs with the same function: the on-policy ratio is 1.
        extras = {"logp": dist.log_prob(policy, action)}
        if (getattr(network, "action_mask_key", "")
                and not network.mask_may_be_empty):  # checked by the runtime (podracer/legal)
            extras[legal.NO_LEGAL] = allows_nothing(dist, obs[network.action_mask_key])
        if keep_policy:
            extras["policy"] = policy
        if keep_value:
            extras["value"] = value
        return action, extras, core_state

    if is_recurrent(network):
        return step
    return lambda ap, obs, key: step(ap, obs, key, None)[:2]
