"""IMPALA (Espeholt et al. 2018): V-trace actor-critic on the Sebulba runtime.

`SPEC` is the agent's builder contract (agents/builders.py): the experiments build IMPALA by
name through it; `make_agent` builds it directly (tests, scripts).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import acting, evaluation, minibatches, normalization
from agents.builders import AgentSpec
from agents.impala.config import ImpalaConfig
from agents.impala.learning import LearnerState, make_learn_step, make_optimizer
from sebulba.agent import Agent

if TYPE_CHECKING:
    from sebulba.runtime_config import RuntimeConfig


def make_agent(network: nn.Module, cfg: ImpalaConfig, num_updates: int,
               batch_envs: int = 0) -> Agent:
    """Builds the IMPALA agent for an actor-critic `network` (networks.ActorCritic: policy
    params for `network.dist`, value; or networks.RecurrentActorCritic, docs/recurrent.md).
    `batch_envs` (env columns per update, all hosts) is needed only for `cfg.reward_scaling`.
    """
    optimizer, lr = make_optimizer(cfg, num_updates)

    def init(key: jax.Array, obs) -> LearnerState:
        params = acting.init_params(network, key, obs)
        norm = normalization.init_state(obs, cfg.obs_norm, cfg.reward_scaling, batch_envs)
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32), norm)

    # The actor samples from the policy and keeps the behaviour log-prob for V-trace.
    return Agent(init=init, actor_params=lambda s: acting.actor_params(s.params, s.norm, cfg),
                 actor_step=acting.make_actor_step(network, cfg),
                 learn_step=make_learn_step(network, cfg, optimizer, lr),
                 initial_core_state=acting.initial_core_state(network),
                 greedy_step=evaluation.make_greedy_step(network, cfg.obs_clip))


def build(network: nn.Module, cfg: ImpalaConfig, runtime: "RuntimeConfig",
          num_updates: int) -> Agent:
    """The builder contract (agents/builders.py): `make_agent` for the run's layout."""
    return make_agent(network, cfg, num_updates, batch_envs=runtime.batch_envs)


def check_minibatches(cfg: ImpalaConfig, runtime: "RuntimeConfig", network_config) -> None:
    """Fails before any thread starts when each learner device's env columns do not split
    into `num_minibatches` minibatches."""
    minibatches.require_divisible(cfg.num_minibatches, minibatches.envs_per_learner(runtime))


SPEC = AgentSpec("impala", build, ImpalaConfig, checks=(check_minibatches,))

__all__ = ["ImpalaConfig", "LearnerState", "SPEC", "build", "check_minibatches", "make_agent"]
