"""What the agents share around the policy: actor params, acting, rollout preprocessing.

Acting samples from the network's action distribution (`network.dist`, networks/
distributions.py) and keeps the behaviour log-prob `logp` of the sampled action in the extras:
it is all V-trace and PPO's importance ratios need, whatever the action space. PPO also keeps
the behaviour distribution's parameters (`policy`, for its KL terms) and the value.

Observation normalisation and reward scaling (agents/normalization.py) are applied here to
the rollout before an agent's loss sees it: observations with the statistics the actors used
(the ones shipped with the current parameters), rewards with the return statistics after this
rollout's update.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import normalization as norm_lib
from sebulba.agent import Rollout


class ActorParams(NamedTuple):
    """What the learner ships to the actors after each update."""

    params: Any
    obs_norm: Any  # RunningStats per observation leaf; None when observations are raw


def actor_params(params: Any, norm: norm_lib.NormState, cfg) -> ActorParams:
    return ActorParams(params, norm.obs if cfg.obs_norm else None)


def actor_obs(ap: ActorParams, obs: Any, cfg) -> Any:
    if ap.obs_norm is None:
        return obs
    return norm_lib.normalize_obs(ap.obs_norm, obs, cfg.obs_clip)


def make_actor_step(network: nn.Module, cfg, keep_policy: bool = False,
                    keep_value: bool = False):
    """actor_step(ActorParams, obs, key) -> (action, {"logp", ["policy"], ["value"]})."""
    dist = network.dist

    def actor_step(ap: ActorParams, obs, key: jax.Array):
        policy, value = network.apply(ap.params, actor_obs(ap, obs, cfg))
        action = dist.sample(policy, key)
        # The learner recomputes log-probs with the same function: the on-policy ratio is 1.
        extras = {"logp": dist.log_prob(policy, action)}
        if keep_policy:
            extras["policy"] = policy
        if keep_value:
            extras["value"] = value
        return action, extras

    return actor_step


def preprocess(norm: norm_lib.NormState, rollout: Rollout, cfg, axis_name: str
               ) -> tuple[norm_lib.NormState, Rollout, dict[str, jax.Array]]:
    """Normalised observations / scaled rewards for the loss, and the updated statistics."""
    metrics: dict[str, jax.Array] = {}
    obs, reward = rollout.obs, rollout.reward
    if cfg.obs_norm:
        # The actors acted on obs normalised with the current statistics: use those, then
        # fold this rollout in for the next one.
        obs = norm_lib.normalize_obs(norm.obs, rollout.obs, cfg.obs_clip)
        norm = norm._replace(obs=norm_lib.update_obs_stats(norm.obs, rollout.obs, axis_name))
    if cfg.reward_scaling:
        done = jnp.logical_or(rollout.terminated, rollout.truncated)
        norm, reward = norm_lib.scale_rewards(norm, rollout.reward, done, rollout.valid,
                                              cfg.discount, axis_name)
        metrics["norm/return_std"] = jnp.sqrt(norm.ret.var)
    return norm, rollout._replace(obs=obs, reward=reward), metrics


def apply_time_major(network: nn.Module, params, obs):
    """Runs the network on [T, B, ...] observations as one [T*B, ...] batch."""
    lead = jax.tree.leaves(obs)[0].shape[:2]
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), obs)
    outputs = network.apply(params, flat)
    return jax.tree.map(lambda x: x.reshape(lead + x.shape[1:]), outputs)


def drop_last(tree: Any) -> Any:
    """[T+1, ...] -> [T, ...] on every leaf (network outputs on obs_0..obs_{T-1})."""
    return jax.tree.map(lambda x: x[:-1], tree)
