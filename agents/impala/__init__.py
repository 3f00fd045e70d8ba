"""IMPALA (Espeholt et al. 2018): V-trace actor-critic, for either runtime.

`SPEC` is the agent's builder contract (agents/builders.py): the experiments build IMPALA by
name through it; `make_agent` builds it directly (tests, scripts).
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import acting, evaluation, minibatches, normalization
from agents.builders import AgentSpec
from agents.impala.config import ImpalaConfig
from agents.impala.learning import LearnerState, make_learn_step, make_optimizer
from podracer.agent import Agent
from podracer.batch import BatchShape


def make_agent(network: nn.Module, cfg: ImpalaConfig, num_updates: int,
               batch_envs: int = 0) -> Agent:
    """Builds the IMPALA agent for an actor-critic `network` (networks.ActorCritic: policy
    params for `network.dist`, value; or networks.RecurrentActorCritic, docs/recurrent.md).
    `batch_envs` (env columns per update, all hosts) is needed only for `cfg.reward_scaling`.
    `cfg.rmsprop_eps` and `cfg.max_grad_norm` must be numbers: `build` sets them from the batch
    (`cfg.resolve`) when they are None.
    """
    if not cfg.resolved:
        raise ValueError(f"rmsprop_eps={cfg.rmsprop_eps} and max_grad_norm={cfg.max_grad_norm}: "
                         f"None means the rule from the minibatch size, which needs the batch; "
                         f"build through agents.impala.build(network, cfg, batch, num_updates) "
                         f"or resolve them first (cfg.resolve(samples_per_gradient_step)).")
    optimizer, lr = make_optimizer(cfg, num_updates)

    def init(key: jax.Array, obs) -> LearnerState:
        params = acting.init_params(network, key, obs)
        norm = normalization.init_state(obs, cfg.obs_norm, cfg.reward_scaling, batch_envs,
                                        raw=normalization.raw_keys(network))
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32), norm)

    # The actor samples from the policy and keeps the behaviour log-prob for V-trace.
    return Agent(init=init, actor_params=lambda s: acting.actor_params(s.params, s.norm, cfg),
                 actor_step=acting.make_actor_step(network, cfg),
                 learn_step=make_learn_step(network, cfg, optimizer, lr),
                 initial_core_state=acting.initial_core_state(network),
                 greedy_step=evaluation.make_greedy_step(network))


def samples_per_step(cfg: ImpalaConfig, batch: BatchShape) -> int:
    """Samples of one gradient step: the update's samples over `num_minibatches`."""
    return batch.samples // cfg.num_minibatches


def build(network: nn.Module, cfg: ImpalaConfig, batch: BatchShape, num_updates: int) -> Agent:
    """The builder contract (agents/builders.py): `make_agent` for the run's batch, with
    the clip and RMSProp epsilon of its minibatch size where the config leaves them None."""
    return make_agent(network, resolve(cfg, batch), num_updates, batch_envs=batch.batch_envs)


def check_minibatches(cfg: ImpalaConfig, batch: BatchShape, network_config) -> None:
    """Fails before any thread starts when each learner device's env columns do not split
    into `num_minibatches` minibatches."""
    minibatches.require_divisible(cfg.num_minibatches, batch.envs_per_learner)


def describe(cfg: ImpalaConfig, batch: BatchShape) -> str:
    """How IMPALA splits the batch, and the constants the minibatch size sets."""
    n = samples_per_step(cfg, batch)
    r = cfg.resolve(n)
    rule = (" (40/n and (0.01/n)^2, cleanba's values for our per-sample mean)"
            if not cfg.resolved else "")
    return (f"IMPALA: {cfg.num_minibatches} gradient step(s) per update of n = {n} samples; "
            f"max_grad_norm {r.max_grad_norm:.6g}, rmsprop_eps {r.rmsprop_eps:.6g}{rule}")


def resolve(cfg: ImpalaConfig, batch: BatchShape) -> ImpalaConfig:
    """The config `build` trains: clip and epsilon set for the batch's minibatch size."""
    return cfg.resolve(samples_per_step(cfg, batch))


SPEC = AgentSpec("impala", build, ImpalaConfig, checks=(check_minibatches,), describe=describe,
                 resolve=resolve)

__all__ = ["ImpalaConfig", "LearnerState", "SPEC", "build", "check_minibatches", "describe",
           "make_agent", "resolve", "samples_per_step"]
