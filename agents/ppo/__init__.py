"""PPO (Schulman et al. 2017), for either runtime: on-policy, or importance-corrected with
V-trace (Espeholt et al. 2018) when Sebulba's actors run ahead of the learner. See docs/ppo.md.

`SPEC` is the agent's builder contract (agents/builders.py), with its config check
(agents/ppo/checks.py); `make_agent` builds it directly (tests, scripts).
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import acting, evaluation, normalization
from agents.builders import AgentSpec
from agents.ppo.checks import check_minibatches
from agents.ppo.config import PPOConfig
from agents.ppo.learning import LearnerState, ValueNorm, make_learn_step, make_optimizer
from podracer.agent import Agent
from podracer.batch import BatchShape


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
        norm = normalization.init_state(obs, cfg.obs_norm, cfg.reward_scaling, batch_envs,
                                        raw=normalization.raw_keys(network))
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32),
                            shuffle_key, ValueNorm.zeros(), norm)

    # The actor keeps the behaviour log-prob and distribution parameters (mu: the ratio,
    # V-trace and the KL terms) and the value (the on-policy anchor, not recomputed).
    return Agent(init=init, actor_params=lambda s: acting.actor_params(s.params, s.norm, cfg),
                 actor_step=acting.make_actor_step(network, cfg, keep_policy=True,
                                                   keep_value=True),
                 learn_step=learn_step, initial_core_state=acting.initial_core_state(network),
                 greedy_step=evaluation.make_greedy_step(network))


def build(network: nn.Module, cfg: PPOConfig, batch: BatchShape, num_updates: int) -> Agent:
    """The builder contract (agents/builders.py): correction="auto" resolved for the run's
    data (on-policy or not), then `make_agent` for its batch."""
    return make_agent(network, resolve(cfg, batch), num_updates, batch_envs=batch.batch_envs)


def describe(cfg: PPOConfig, batch: BatchShape) -> str:
    """How PPO splits the batch into gradient steps."""
    n = batch.samples // cfg.num_minibatches
    what = "env columns of T steps" if cfg.minibatch_axis == "env" else "shuffled steps"
    return (f"PPO: {cfg.num_epochs} epoch(s) x {cfg.num_minibatches} minibatch(es) of n = {n} "
            f"samples ({what}) = {cfg.num_epochs * cfg.num_minibatches} gradient steps per "
            f"update; correction {cfg.resolve(batch.on_policy).correction!r}")


def resolve(cfg: PPOConfig, batch: BatchShape) -> PPOConfig:
    """The config `build` trains: correction="auto" resolved for the batch's data."""
    return cfg.resolve(batch.on_policy)


SPEC = AgentSpec("ppo", build, PPOConfig, checks=(check_minibatches,), describe=describe,
                 resolve=resolve)

__all__ = ["LearnerState", "PPOConfig", "SPEC", "build", "check_minibatches", "describe",
           "make_agent", "resolve"]
