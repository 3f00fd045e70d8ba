"""PPO (Schulman et al. 2017) on the Sebulba runtime: on-policy, or importance-corrected with
V-trace (Espeholt et al. 2018) when actors run ahead of the learner. See docs/ppo.md.

`SPEC` is the agent's builder contract (agents/builders.py), with its config check
(agents/ppo/checks.py); `make_agent` builds it directly (tests, scripts).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import acting, evaluation, normalization
from agents.builders import AgentSpec
from agents.ppo.checks import check_minibatches
from agents.ppo.config import PPOConfig
from agents.ppo.learning import LearnerState, ValueNorm, make_learn_step, make_optimizer
from sebulba.agent import Agent

if TYPE_CHECKING:
    from sebulba.runtime_config import RuntimeConfig


def make_agent(network: nn.Module, cfg: PPOConfig, num_updates: int,
               batch_envs: int = 0) -> Agent:
    """Builds the PPO agent for an actor-critic `network` (networks.ActorCritic: policy
    params for `network.dist`, value; or networks.RecurrentActorCritic, docs/recurrent.md,
    which needs `cfg.minibatch_axis="env"`). `batch_envs` (env columns per update, all hosts) is
    needed only for `cfg.reward_scaling`.

    `cfg.correction` must be "none" or "vtrace"; resolve "auto" for the runtime's mode first
    with `cfg.resolve(synchronous)` (`build` does).
    """
    optimizer, lr = make_optimizer(cfg, num_updates)
    learn_step = make_learn_step(network, cfg, optimizer, lr)

    def init(key: jax.Array, obs) -> LearnerState:
        init_key, shuffle_key = jax.random.split(key)
        params = acting.init_params(network, init_key, obs)
        norm = normalization.init_state(obs, cfg.obs_norm, cfg.reward_scaling, batch_envs)
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32),
                            shuffle_key, ValueNorm.zeros(), norm)

    # The actor keeps the behaviour log-prob and distribution parameters (mu: the ratio,
    # V-trace and the KL terms) and the value (the on-policy anchor, not recomputed).
    return Agent(init=init, actor_params=lambda s: acting.actor_params(s.params, s.norm, cfg),
                 actor_step=acting.make_actor_step(network, cfg, keep_policy=True,
                                                   keep_value=True),
                 learn_step=learn_step, initial_core_state=acting.initial_core_state(network),
                 greedy_step=evaluation.make_greedy_step(network, cfg.obs_clip))


def build(network: nn.Module, cfg: PPOConfig, runtime: "RuntimeConfig",
          num_updates: int) -> Agent:
    """The builder contract (agents/builders.py): correction="auto" resolved for the run's
    mode (synchronous or not), then `make_agent` for its layout."""
    return make_agent(network, cfg.resolve(runtime.synchronous), num_updates,
                      batch_envs=runtime.batch_envs)


SPEC = AgentSpec("ppo", build, PPOConfig, checks=(check_minibatches,))

__all__ = ["LearnerState", "PPOConfig", "SPEC", "build", "check_minibatches", "make_agent"]
