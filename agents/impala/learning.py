"""IMPALA's learner step: V-trace loss over the local batch, mean gradient, optax update; with
`num_minibatches` M, M such steps per update on interleaved env columns (cleanba's split)."""
from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from agents import minibatches, parallel, schedules
from agents.impala.config import ImpalaConfig
from agents.impala.losses import vtrace_loss
from agents.normalization import NormState, preprocess
from agents.unroll import apply_time_major, drop_last
from podracer.agent import Rollout


class LearnerState(NamedTuple):
    params: dict
    opt_state: optax.OptState
    update: jax.Array  # number of updates applied so far
    norm: NormState    # observation / reward statistics (placeholders when switched off)


def make_optimizer(cfg: ImpalaConfig, num_updates: int):
    """Returns (optax optimizer, learning-rate schedule over updates).

    optax counts gradient steps; with `num_minibatches` M of them per update the rate is the
    schedule at step // M (cleanba's `count // num_minibatches`), so the decay spans the run
    whatever M is, and every minibatch of an update uses the same rate.
    """
    # num_updates may be a schedules.Horizon: a resumed run's re-stretched decay.
    lr = (schedules.linear_decay(cfg.learning_rate, num_updates) if cfg.lr_decay
          else optax.constant_schedule(cfg.learning_rate))
    m = cfg.num_minibatches
    per_step = lr if m == 1 else (lambda count: lr(count // m))
    if cfg.optimizer == "rmsprop":
        opt = optax.rmsprop(per_step, decay=cfg.rmsprop_decay, eps=cfg.rmsprop_eps)
    else:
        opt = optax.adam(per_step, eps=cfg.adam_eps)
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

    def sgd_step(params, opt_state, rollout: Rollout, axis_name: str):
        grads, metrics = parallel.mean_grad(loss_fn, params, rollout, axis_name=axis_name)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        metrics = parallel.mean_metrics(metrics, axis_name)
        metrics["optim/grad_norm"] = optax.tree.norm(grads)
        return optax.apply_updates(params, updates), opt_state, metrics

    def learn_step(state: LearnerState, rollout: Rollout, axis_name: str):
        norm, rollout, norm_metrics = preprocess(state.norm, rollout, cfg, axis_name)
        # At trace time too, for agents built without the experiment's config check.
        minibatches.require_divisible(cfg.num_minibatches, rollout.valid.shape[1])
        params, opt_state, steps = state.params, state.opt_state, []
        # A Python loop, not lax.scan: M is small, and XLA:CPU runs convolutions inside scan
        # ~25x slower (docs/ppo.md "Loop form and the CPU trap"; jax-ml/jax#12868).
        # Minibatch i: this device's env columns i, i+M, ...
        for i in range(cfg.num_minibatches):
            minibatch = jax.tree.map(lambda x: x[:, i::cfg.num_minibatches], rollout)
            params, opt_state, metrics = sgd_step(params, opt_state, minibatch, axis_name)
            steps.append(metrics)
        metrics = jax.tree.map(lambda *xs: jnp.mean(jnp.stack(xs)), *steps)
        metrics.update(norm_metrics)
        metrics["optim/learning_rate"] = jnp.asarray(lr_schedule(state.update), jnp.float32)
        return LearnerState(params, opt_state, state.update + 1, norm), metrics

    return learn_step
