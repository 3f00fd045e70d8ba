"""IMPALA's learner step: V-trace loss over the local batch, mean gradient, optax update."""
from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from agents import parallel, schedules
from agents.impala.config import ImpalaConfig
from agents.impala.losses import vtrace_loss
from agents.normalization import NormState, preprocess
from agents.unroll import apply_time_major, drop_last
from sebulba.agent import Rollout


class LearnerState(NamedTuple):
    params: dict
    opt_state: optax.OptState
    update: jax.Array  # number of updates applied so far
    norm: NormState    # observation / reward statistics (placeholders when switched off)


def make_optimizer(cfg: ImpalaConfig, num_updates: int):
    """Returns (optax optimizer, learning-rate schedule)."""
    # num_updates may be a schedules.Horizon: a resumed run's re-stretched decay.
    lr = (schedules.linear_decay(cfg.learning_rate, num_updates) if cfg.lr_decay
          else optax.constant_schedule(cfg.learning_rate))
    if cfg.optimizer == "rmsprop":
        opt = optax.rmsprop(lr, decay=cfg.rmsprop_decay, eps=cfg.rmsprop_eps)
    else:
        opt = optax.adam(lr, eps=cfg.adam_eps)
    if cfg.max_grad_norm > 0:
        opt = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), opt)
    return opt, lr


def make_learn_step(network: nn.Module, cfg: ImpalaConfig, optimizer, lr_schedule):
    dist = network.dist

    def loss_fn(params, rollout: Rollout):
        # Recurrent networks: re-run the core over obs_0..obs_T from the stored state.
        pi, values = apply_time_major(network, params, rollout.obs, rollout.core_state,
                                      rollout.valid)
        pi = drop_last(pi)
        per_env = jax.vmap(vtrace_loss, in_axes=(1, 1, 1, 1, 1, 1, 1, 1, None))
        # The behaviour log-prob comes from the actor: importance ratios for any action space.
        losses, metrics = per_env(dist.log_prob(pi, rollout.action), dist.entropy(pi), values,
                                  rollout.extras["logp"], rollout.reward,
                                  rollout.terminated, rollout.truncated, rollout.valid, cfg)
        return jnp.mean(losses), jax.tree.map(jnp.mean, metrics)

    def learn_step(state: LearnerState, rollout: Rollout, axis_name: str):
        norm, rollout, norm_metrics = preprocess(state.norm, rollout, cfg, axis_name)
        grads, metrics = parallel.mean_grad(loss_fn, state.params, rollout, axis_name=axis_name)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = parallel.mean_metrics(metrics, axis_name)
        metrics.update(norm_metrics)
        metrics["optim/grad_norm"] = optax.tree.norm(grads)
        metrics["optim/learning_rate"] = jnp.asarray(lr_schedule(state.update), jnp.float32)
        return LearnerState(params, opt_state, state.update + 1, norm), metrics

    return learn_step
