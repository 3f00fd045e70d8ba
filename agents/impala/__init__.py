"""IMPALA (Espeholt et al. 2018): V-trace actor-critic on the Sebulba runtime."""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import normalization, policy
from agents.impala.acting import make_actor_step
from agents.impala.config import ImpalaConfig
from agents.impala.learning import LearnerState, make_learn_step, make_optimizer
from sebulba.agent import Agent


def make_agent(network: nn.Module, cfg: ImpalaConfig, num_updates: int,
               batch_envs: int = 0) -> Agent:
    """Builds the IMPALA agent for an actor-critic `network` (networks.ActorCritic: policy
    params for `network.dist`, value; or networks.RecurrentActorCritic, docs/recurrent.md).
    `batch_envs` (env columns per update, all hosts) is needed only for `cfg.reward_scaling`.
    """
    optimizer, lr = make_optimizer(cfg, num_updates)

    def init(key: jax.Array, obs) -> LearnerState:
        params = policy.init_params(network, key, obs)
        norm = normalization.init_state(obs, cfg.obs_norm, cfg.reward_scaling, batch_envs)
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32), norm)

    return Agent(init=init, actor_params=lambda s: policy.actor_params(s.params, s.norm, cfg),
                 actor_step=make_actor_step(network, cfg),
                 learn_step=make_learn_step(network, cfg, optimizer, lr),
                 initial_core_state=policy.initial_core_state(network))


__all__ = ["ImpalaConfig", "LearnerState", "make_agent"]
