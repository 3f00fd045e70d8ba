"""IMPALA's learner step: V-trace loss over the local batch, mean gradient, optax update."""
from __future__ import annotations

from typing import NamedTuple

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from agents import parallel
from agents.impala.config import ImpalaConfig
from agents.impala.losses import vtrace_loss
from sebulba.agent import Rollout


class LearnerState(NamedTuple):
    params: dict
    opt_state: optax.OptState
    update: jax.Array  # number of updates applied so far


def make_optimizer(cfg: ImpalaConfig, num_updates: int):
    """Returns (optax optimizer, learning-rate schedule)."""
    lr = (optax.linear_schedule(cfg.learning_rate, 0.0, num_updates) if cfg.lr_decay
          else optax.constant_schedule(cfg.learning_rate))
    if cfg.optimizer == "rmsprop":
        opt = optax.rmsprop(lr, decay=cfg.rmsprop_decay, eps=cfg.rmsprop_eps)
    else:
        opt = optax.adam(lr, eps=cfg.adam_eps)
    if cfg.max_grad_norm > 0:
        opt = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), opt)
    return opt, lr


def apply_time_major(network: nn.Module, params, obs):
    """Runs the network on [T, B, ...] observations as one [T*B, ...] batch."""
    lead = jax.tree.leaves(obs)[0].shape[:2]
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), obs)
    outputs = network.apply(params, flat)
    return jax.tree.map(lambda x: x.reshape(lead + x.shape[1:]), outputs)


def make_learn_step(network: nn.Module, cfg: ImpalaConfig, optimizer, lr_schedule):
    def loss_fn(params, rollout: Rollout):
        logits, values = apply_time_major(network, params, rollout.obs)
        pi = distrax.Categorical(logits=logits[:-1])
        mu = distrax.Categorical(logits=rollout.extras["logits"])
        per_env = jax.vmap(vtrace_loss, in_axes=(1, 1, 1, 1, 1, 1, 1, 1, None))
        losses, metrics = per_env(pi.log_prob(rollout.action), pi.entropy(), values,
                                  mu.log_prob(rollout.action), rollout.reward,
                                  rollout.terminated, rollout.truncated, rollout.valid, cfg)
        return jnp.mean(losses), jax.tree.map(jnp.mean, metrics)

    def learn_step(state: LearnerState, rollout: Rollout, axis_name: str):
        grads, metrics = parallel.mean_grad(loss_fn, state.params, rollout, axis_name=axis_name)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = parallel.mean_metrics(metrics, axis_name)
        metrics["optim/grad_norm"] = optax.tree.norm(grads)
        metrics["optim/learning_rate"] = lr_schedule(state.update)
        return LearnerState(params, opt_state, state.update + 1), metrics

    return learn_step
