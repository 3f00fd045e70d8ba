"""PPO's learner step: anchor + targets once per update, then epochs of minibatch SGD.

Runs on every learner device on its local env shard (inside the runtime's shard_map):
0. Observation normalisation / reward scaling (agents/normalization.preprocess), when on.
1. Anchor. On-policy ("none"): pi_old is the actor's behaviour policy (its distribution
   parameters, log-prob and values travel in the rollout's extras); only V(bootstrap obs) is
   recomputed. Importance-corrected ("vtrace"): one forward pass with the learner's current
   parameters gives pi_old and V, and rho = pi_old(a) / mu(a) (mu(a): the actor's log-prob)
   feeds V-trace for advantages and value targets. Any action space: the distribution is
   `network.dist` (networks/distributions.py).
2. Epochs. Each device splits its local env columns into minibatches (whole columns, so
   recurrent agents can reuse the split; column i goes to minibatch i mod M after an optional
   permutation, so N devices together see exactly the minibatches one device would see on the
   whole batch with shuffling off). Every SGD step averages gradients over the learner axis with
   agents/parallel.mean_grad; statistics that must agree across devices (advantage moments,
   value-normaliser moments, the KL for early stopping) are psum/pmean-ed.
   With `minibatch_axis="sample"` the [T, B] steps are flattened first and minibatches are
   made of single steps (shuffled), as the PPO paper and cleanrl do for MuJoCo with one env.
Recurrent networks (docs/recurrent.md): the anchor and every minibatch loss re-run the core
from the state stored with the rollout (`Batch.core_state`, sliced by the same env columns as
the rest of the minibatch), with resets at the episode starts inside the unroll; so minibatches
must be whole env columns (`minibatch_axis="env"`; "sample" is refused).
The loop form is a config choice (`loop`): "scan" compiles one body (fine for MLPs and on
GPU/TPU); "unroll" emits every step (XLA:CPU runs convolutions inside scan ~25x slower).
"""
from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from agents import parallel, schedules
from agents.minibatches import random_permutation
from agents.normalization import NormState, preprocess
from agents.ppo.checks import require_divisible, require_whole_sequences
from agents.ppo.config import PPOConfig
from agents.ppo.losses import PPO_LOSS_TERMS, gae_targets, ppo_loss_terms, vtrace_targets
from agents.unroll import apply_time_major, drop_last
from networks import is_recurrent
from podracer import collectives
from podracer.agent import Rollout

_VAR_FLOOR = 1e-4  # value normaliser: std >= 0.01, so tiny-return tasks do not blow up


class ValueNorm(NamedTuple):
    """Running return statistics (EMA with bias correction: mean = ema_mean / weight)."""

    ema_mean: jax.Array
    ema_mean_sq: jax.Array
    weight: jax.Array

    @classmethod
    def zeros(cls) -> "ValueNorm":
        # Three distinct buffers: the learner state is donated, and one buffer may not be
        # donated twice.
        return cls(*(jnp.zeros((), jnp.float32) for _ in range(3)))

    def stats(self) -> tuple[jax.Array, jax.Array]:
        """(mean, std); (0, 1) before the first update."""
        seen = self.weight > 0
        w = jnp.where(seen, self.weight, 1.0)
        mean = jnp.where(seen, self.ema_mean / w, 0.0)
        var = jnp.where(seen, self.ema_mean_sq / w - jnp.square(mean), 1.0)
        return mean, jnp.sqrt(jnp.maximum(var, _VAR_FLOOR))


class LearnerState(NamedTuple):
    params: dict
    opt_state: optax.OptState
    update: jax.Array      # number of updates applied so far
    key: jax.Array         # minibatch shuffling
    value_norm: ValueNorm  # unused (stays zero) unless cfg.value_norm
    norm: NormState        # observation / reward statistics (placeholders when switched off)


class Batch(NamedTuple):
    """One update's data on one device, time-major [T, B_local, ...]."""

    obs: object
    action: jax.Array
    old_policy: object  # anchor distribution parameters (pytree, see networks/distributions)
    old_logp: jax.Array
    old_v: jax.Array   # anchor values (normalised space if value_norm)
    adv: jax.Array     # advantages before importance weighting
    weight: jax.Array  # policy-gradient importance weight (ones on-policy)
    target: jax.Array  # value targets (normalised space if value_norm)
    valid: jax.Array
    core_state: object = None  # recurrent nets: [1, B_local, ...] state at step 0 (else None)


# The SGD step's metrics vector, in order (sgd_step).
STEP_METRICS = (*PPO_LOSS_TERMS, "optim/grad_norm")


def unpack(metrics: jax.Array) -> dict[str, jax.Array]:
    """{name: metrics[..., i]} of STEP_METRICS vectors ([..., len(STEP_METRICS)])."""
    return {name: metrics[..., i] for i, name in enumerate(STEP_METRICS)}


def make_optimizer(cfg: PPOConfig, num_updates: int):
    """Returns (optax transform without the learning rate, lr schedule over updates).

    The learning rate is applied per update (not per SGD step) so that annealing follows
    cleanrl's `1 - (update - 1) / num_updates` whatever the number of minibatches or early stops.
    """
    # num_updates may be a schedules.Horizon: a resumed run's re-stretched decay.
    lr = (schedules.linear_decay(cfg.learning_rate, num_updates) if cfg.lr_decay
          else optax.constant_schedule(cfg.learning_rate))
    opt = optax.scale_by_adam(eps=cfg.adam_eps)
    if cfg.max_grad_norm > 0:
        opt = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), opt)
    return opt, lr


def masked_moments(x: jax.Array, valid: jax.Array, axis_name: str):
    """Mean and variance of x over the valid entries of every device's shard."""
    m = valid.astype(jnp.float32)
    s, s2, n = collectives.psum((jnp.sum(m * x), jnp.sum(m * x * x), jnp.sum(m)), axis_name)
    n = jnp.maximum(n, 1.0)
    mean = s / n
    return mean, jnp.maximum(s2 / n - jnp.square(mean), 0.0)


def minibatch_columns(key: jax.Array, num_envs: int, cfg: PPOConfig) -> jax.Array:
    """[M, num_envs // M] column indices; minibatch i takes columns perm[i::M]."""
    m = cfg.num_minibatches
    # At trace time, for agents built without the experiment's config check (same rule).
    require_divisible(m, num_envs, cfg.minibatch_axis)
    perm = random_permutation(key, num_envs) if cfg.shuffle else jnp.arange(num_envs)
    return perm.reshape(num_envs // m, m).T


def make_learn_step(network: nn.Module, cfg: PPOConfig, optimizer, lr_schedule):
    if cfg.correction not in ("none", "vtrace"):
        raise ValueError(f"correction={cfg.correction!r} must be resolved to 'none' or "
                         f"'vtrace' first (PPOConfig.resolve(synchronous)).")

    recurrent = is_recurrent(network)
    if recurrent:  # the spec's config check has the same rule; make_agent callers skip it
        require_whole_sequences(cfg.minibatch_axis, getattr(network, "lstm_size", None))
    dist = network.dist

    def unroll(params, obs, rollout: Rollout):
        """Network outputs on `obs` [L, B]; recurrent: from the rollout's stored state."""
        return apply_time_major(network, params, obs, rollout.core_state, rollout.valid)

    def prepare(state: LearnerState, rollout: Rollout, axis_name: str):
        """Anchor policy/values, targets, value-normaliser update: once per update."""
        mu_logp = rollout.extras["logp"]
        if cfg.correction == "vtrace":
            old_policy, raw_v = unroll(state.params, rollout.obs, rollout)
            old_policy = drop_last(old_policy)
            old_logp = dist.log_prob(old_policy, rollout.action)
        else:
            old_policy, old_logp = rollout.extras["policy"], mu_logp
            if recurrent:  # V(obs_T) needs the memory of the whole unroll
                boot_v = unroll(state.params, rollout.obs, rollout)[1][-1]
            else:
                _, boot_v = network.apply(state.params,
                                          jax.tree.map(lambda x: x[-1], rollout.obs))
            raw_v = jnp.concatenate([rollout.extras["value"], boot_v[None]], axis=0)
        old_policy, old_logp, raw_v = jax.lax.stop_gradient((old_policy, old_logp, raw_v))
        mean, std = state.value_norm.stats()
        values = raw_v * std + mean  # real scale (identity without value_norm)
        args = (rollout.reward, values, rollout.terminated, rollout.truncated)
        metrics = {}
        if cfg.correction == "vtrace":
            rho = jnp.exp(old_logp - mu_logp)
            adv, target, weight = jax.vmap(vtrace_targets, in_axes=(1, 1, 1, 1, 1, None),
                                           out_axes=1)(*args, rho, cfg)
            metrics["ppo/rho_mean"] = masked_moments(rho, rollout.valid, axis_name)[0]
        else:
            adv, target = jax.vmap(gae_targets, in_axes=(1, 1, 1, 1, None), out_axes=1)(*args,
                                                                                        cfg)
            weight = jnp.ones_like(adv)
        value_norm = state.value_norm
        if cfg.value_norm:
            t_mean, t_var = masked_moments(target, rollout.valid, axis_name)
            d = cfg.value_norm_decay
            value_norm = ValueNorm(d * value_norm.ema_mean + (1 - d) * t_mean,
                                   d * value_norm.ema_mean_sq + (1 - d) * (t_var + t_mean ** 2),
                                   d * value_norm.weight + (1 - d))
            mean, std = value_norm.stats()
            metrics.update({"value_norm/mean": mean, "value_norm/std": std})
        a_mean, a_var = masked_moments(adv, rollout.valid, axis_name)
        metrics.update({"adv/mean": a_mean, "adv/std": jnp.sqrt(a_var),
                        "value/target_mean": masked_moments(target, rollout.valid,
                                                            axis_name)[0]})
        batch = Batch(obs=jax.tree.map(lambda x: x[:-1], rollout.obs), action=rollout.action,
                      old_policy=old_policy, old_logp=old_logp,
                      old_v=(values[:-1] - mean) / std, adv=adv, weight=weight,
                      target=(target - mean) / std,
                      valid=rollout.valid, core_state=rollout.core_state)
        return batch, value_norm, metrics

    def loss_fn(params, mb: Batch):
        if cfg.minibatch_axis == "sample":
            # [1, n] steps -> one "trajectory" of n steps, ppo_loss_terms averaging over all
            # n. Feed-forward only (recurrent nets are refused), so the network sees [n, ...]
            # directly: no size-1 axis reaches the loss, whose reductions XLA:CPU runs far
            # slower with a trailing unit axis once members are vmapped (a 16-member
            # program's SGD step was ~15% slower with it).
            mb = jax.tree.map(lambda x: x[0], mb._replace(core_state=None))
            pi, v = network.apply(params, mb.obs)
            terms_of = ppo_loss_terms
        else:
            pi, v = apply_time_major(network, params, mb.obs, mb.core_state, mb.valid)
            per_env = jax.vmap(ppo_loss_terms, in_axes=(1,) * 9 + (None,))
            # Mean over env columns of per-column means (as IMPALA): every device holds the
            # same number of columns, so the mean over devices is the one-device mean exactly.
            terms_of = lambda *args: jnp.mean(per_env(*args), axis=0)  # noqa: E731
        terms = terms_of(dist.log_prob(pi, mb.action), mb.old_logp, dist.entropy(pi),
                         dist.kl(mb.old_policy, pi), v, mb.old_v, mb.adv, mb.target, mb.valid,
                         cfg)  # [len(PPO_LOSS_TERMS)], the loss first
        return terms[0], terms

    def sgd_step(params, opt_state, mb: Batch, lr, axis_name: str):
        if cfg.normalize_advantages:
            # Moments over the global minibatch (all devices), as one device would compute.
            a_mean, a_var = masked_moments(mb.adv, mb.valid, axis_name)
            mb = mb._replace(adv=(mb.adv - a_mean) / (jnp.sqrt(a_var) + 1e-8))
        # Importance weight after centring (see losses.vtrace_targets); ones on-policy.
        mb = mb._replace(adv=mb.weight * mb.adv)
        grads, terms = parallel.mean_grad(loss_fn, params, mb, axis_name=axis_name)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        updates = jax.tree.map(lambda u: -lr * u, updates)
        # The step's metrics as one vector (STEP_METRICS): the epoch loops stack one output
        # per step instead of one per metric, and `unpack` names them once per update.
        metrics = jnp.append(parallel.mean_metrics(terms, axis_name), optax.tree.norm(grads))
        return optax.apply_updates(params, updates), opt_state, metrics

    def guarded_step(carry, mb: Batch, lr, axis_name: str):
        """One SGD step, skipped once the KL early stop has fired (decided identically on
        every device: the KL is pmean-ed). Returns (carry, (metrics vector, ran))."""
        params, opt_state, stopped = carry
        if cfg.target_kl <= 0:
            params, opt_state, metrics = sgd_step(params, opt_state, mb, lr, axis_name)
            return (params, opt_state, stopped), (metrics, jnp.ones((), jnp.float32))

        def run(_):
            return sgd_step(params, opt_state, mb, lr, axis_name)

        def skip(_):
            shapes = jax.eval_shape(run, None)[2]
            return params, opt_state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        params, opt_state, metrics = jax.lax.cond(stopped, skip, run, None)
        return (params, opt_state, stopped), (metrics, 1.0 - stopped.astype(jnp.float32))

    def end_epoch(carry, metrics, ran):
        """Early stop (cleanrl semantics): after an epoch whose mean approx KL > target_kl."""
        if cfg.target_kl <= 0:
            return carry
        params, opt_state, stopped = carry
        kl = jnp.sum(ran * metrics["policy/approx_kl"]) / jnp.maximum(jnp.sum(ran), 1.0)
        return params, opt_state, jnp.logical_or(stopped, kl > cfg.target_kl)

    def epochs_scan(carry, batch: Batch, keys, lr, axis_name):
        num_envs = batch.valid.shape[1]

        def epoch(carry, key):
            cols = minibatch_columns(key, num_envs, cfg)
            # [T, M, mb, ...] -> [M, T, mb, ...]: scan over minibatches.
            mbs = jax.tree.map(lambda x: jnp.moveaxis(jnp.take(x, cols, axis=1), 1, 0), batch)
            carry, (step_metrics, ran) = jax.lax.scan(
                lambda c, mb: guarded_step(c, mb, lr, axis_name), carry, mbs)
            return end_epoch(carry, unpack(step_metrics), ran), (step_metrics, ran)

        return jax.lax.scan(epoch, carry, keys)

    def epochs_unrolled(carry, batch: Batch, keys, lr, axis_name):
        num_envs = batch.valid.shape[1]
        out = []
        for e in range(cfg.num_epochs):
            cols = minibatch_columns(keys[e], num_envs, cfg)
            epoch_out = []
            for i in range(cfg.num_minibatches):
                mb = jax.tree.map(lambda x: jnp.take(x, cols[i], axis=1), batch)
                carry, o = guarded_step(carry, mb, lr, axis_name)
                epoch_out.append(o)
            step_metrics, ran = jax.tree.map(lambda *xs: jnp.stack(xs), *epoch_out)
            carry = end_epoch(carry, unpack(step_metrics), ran)
            out.append((step_metrics, ran))
        return carry, jax.tree.map(lambda *xs: jnp.stack(xs), *out)

    def learn_step(state: LearnerState, rollout: Rollout, axis_name: str):
        norm, rollout, norm_metrics = preprocess(state.norm, rollout, cfg, axis_name)
        batch, value_norm, prep_metrics = prepare(state, rollout, axis_name)
        prep_metrics.update(norm_metrics)
        if cfg.minibatch_axis == "sample":  # [T, B, ...] -> [1, T*B, ...]: steps as columns
            batch = jax.tree.map(lambda x: x.reshape((1, -1) + x.shape[2:]), batch)
        key, sub = jax.random.split(state.key)
        keys = jax.random.split(sub, cfg.num_epochs)
        lr = jnp.asarray(lr_schedule(state.update), jnp.float32)  # constant schedules: a float
        carry = (state.params, state.opt_state, jnp.zeros((), bool))
        loop = epochs_scan if cfg.loop == "scan" else epochs_unrolled
        (params, opt_state, _), (step_metrics, ran) = loop(carry, batch, keys, lr, axis_name)
        metrics = unpack(step_metrics)  # [epochs, minibatches] each
        # The first SGD step (always run) sees the parameters the update started from: on
        # policy (synchronous) they are the actor's, so its clip fraction is 0 and its approx
        # KL ~0; anything else means the actor acted with other parameters than the ones the
        # learner thinks (which the policy-lag counter cannot see).
        first = {"ppo/first_minibatch_clip_frac": metrics["policy/clip_frac"][0, 0],
                 "ppo/first_minibatch_approx_kl": metrics["policy/approx_kl"][0, 0]}
        # Average each metric over the SGD steps that ran ([epochs, minibatches] arrays).
        steps = jnp.maximum(jnp.sum(ran), 1.0)
        metrics = unpack(jnp.sum(ran[..., None] * step_metrics, axis=(0, 1)) / steps)
        metrics.update(first)
        metrics.update(prep_metrics)
        metrics["ppo/epochs_run"] = jnp.sum(ran) / cfg.num_minibatches
        metrics["optim/learning_rate"] = lr
        new_state = LearnerState(params, opt_state, state.update + 1, key, value_norm, norm)
        return new_state, metrics

    return learn_step
