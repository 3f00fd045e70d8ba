"""PPO's per-trajectory targets and loss (Schulman et al. 2017, eq. 7 and 9).

Every function works on ONE trajectory of time-major arrays of shape [T] (rlax naming: `_t`
for the step's outcome, `_tm1` for the value of the state the step starts from); the learner
vmaps them over the environment axis. `valid_t` is False on EnvPool's reset steps, which are
left out of every loss term (their advantages are meaningless: the action was ignored).
"""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from agents import returns
from agents.ppo.config import PPOConfig

Array = chex.Array


def _clip_reward(r_t: Array, cfg: PPOConfig) -> Array:
    return jnp.clip(r_t, -cfg.reward_clip, cfg.reward_clip) if cfg.reward_clip > 0 else r_t


def gae_targets(r_t: Array, values: Array, terminated_t: Array, truncated_t: Array,
                cfg: PPOConfig) -> tuple[Array, Array]:
    """On-policy advantages and value targets: GAE(lambda), returns = A + V.

    values: V(obs_0..obs_T), [T+1]. Bootstraps from V(final obs) on truncation, not on
    termination (agents/returns.fold_truncation). Returns (adv_t, target_tm1), no gradient.
    """
    chex.assert_rank([r_t, values], 1)
    chex.assert_shape(values, (r_t.shape[0] + 1,))
    v_tm1, v_t = values[:-1], values[1:]
    r_t, discount_t = returns.fold_truncation(_clip_reward(r_t, cfg), v_t, terminated_t,
                                              truncated_t, cfg.discount,
                                              cfg.bootstrap_truncation)
    adv_t = returns.gae(r_t, discount_t, v_tm1, v_t, cfg.gae_lambda)
    return adv_t, jax.lax.stop_gradient(adv_t + v_tm1)


def vtrace_targets(r_t: Array, values: Array, terminated_t: Array, truncated_t: Array,
                   rho_tm1: Array, cfg: PPOConfig) -> tuple[Array, Array, Array]:
    """Importance-corrected advantages and value targets for stale (off-policy) rollouts.

    rho_tm1 = pi_old(a|x) / mu(a|x): the learner's anchor policy over the actor's behaviour
    policy. Returns (adv_t, vs, weight_t), no gradient, where weight_t * adv_t is V-trace's
    policy-gradient advantage min(clip_pg_rho, rho_t) (r_t + gamma v_{t+1} - V(x_t)).

    The weight is kept apart so that advantage normalisation can centre adv_t *before* the
    importance weight is applied: a baseline b subtracted after weighting adds
    b * E_mu[grad log pi], which is not zero off-policy (it pushes pi further along its last
    update and collapses the entropy); b * rho keeps E_mu[rho b grad log pi] = 0.
    """
    chex.assert_rank([r_t, values, rho_tm1], 1)
    chex.assert_shape(values, (r_t.shape[0] + 1,))
    v_tm1, v_t = values[:-1], values[1:]
    r_t, discount_t = returns.fold_truncation(_clip_reward(r_t, cfg), v_t, terminated_t,
                                              truncated_t, cfg.discount,
                                              cfg.bootstrap_truncation)
    vs, _ = returns.vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, cfg.gae_lambda,
                           cfg.clip_rho, cfg.clip_pg_rho)
    vs_t = jnp.concatenate([vs[1:], v_t[-1:]])  # v_{t+1}, bootstrapping from V(x_T)
    adv_t = r_t + discount_t * vs_t - v_tm1
    weight_t = jnp.minimum(cfg.clip_pg_rho, rho_tm1)
    return jax.lax.stop_gradient((adv_t, vs, weight_t))


# What ppo_loss_terms returns, in order: the loss first, then the diagnostics.
PPO_LOSS_TERMS = ("loss/total", "loss/policy", "loss/value", "policy/entropy", "policy/kl",
                  "policy/approx_kl", "policy/clip_frac", "value/mean")


def ppo_loss_terms(
    logp_t: Array, old_logp_t: Array, entropy_t: Array, kl_t: Array, v_tm1: Array,
    old_v_tm1: Array, adv_t: Array, target_tm1: Array, valid_t: Array, cfg: PPOConfig,
) -> Array:
    """Clipped-surrogate PPO loss for one trajectory of T steps, averaged over valid steps,
    with its diagnostics: a vector of the PPO_LOSS_TERMS, the loss (differentiable) first.

    logp_t: log pi_theta(a_t|x_t), [T]; old_logp_t: log pi_old (the anchor: behaviour policy
    on-policy, the learner's pre-update policy when importance-corrected). entropy_t, kl_t:
    entropy of pi_theta and KL(pi_old || pi_theta) per step. v_tm1 / old_v_tm1: current and
    anchor values V(x_t); adv_t, target_tm1: advantages and value targets (no gradient).

        L = -min(r A, clip(r, 1-eps, 1+eps) A)                           r = pi_theta / pi_old
            + value_cost * 0.5 * max((V - G)^2, (V_old + clip(V - V_old, -e, e) - G)^2)
            - entropy_cost * H[pi_theta] + kl_cost * KL(pi_old || pi_theta)

    Every term is a per-step quantity averaged over the valid steps, so all of them are one
    masked reduction of the stacked per-step terms (the loss's per-step sum among them, the
    mean being linear): the learner runs this every SGD step, and on a small batch each
    separate reduction is a kernel call of its own.
    """
    chex.assert_rank([logp_t, old_logp_t, entropy_t, kl_t, v_tm1, old_v_tm1, adv_t,
                      target_tm1, valid_t], 1)
    chex.assert_equal_shape([logp_t, old_logp_t, entropy_t, kl_t, v_tm1, old_v_tm1, adv_t,
                             target_tm1, valid_t])
    log_ratio = logp_t - old_logp_t
    ratio = jnp.exp(log_ratio)
    clipped = jnp.clip(ratio, 1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps)
    pg_loss_t = -jnp.minimum(ratio * adv_t, clipped * adv_t)

    v_loss_t = jnp.square(v_tm1 - target_tm1)
    if cfg.value_clip_eps > 0:
        v_clipped = old_v_tm1 + jnp.clip(v_tm1 - old_v_tm1, -cfg.value_clip_eps,
                                         cfg.value_clip_eps)
        v_loss_t = jnp.maximum(v_loss_t, jnp.square(v_clipped - target_tm1))
    v_loss_t = 0.5 * v_loss_t

    total_t = pg_loss_t + cfg.value_cost * v_loss_t - cfg.entropy_cost * entropy_t
    if cfg.kl_cost > 0:
        total_t = total_t + cfg.kl_cost * kl_t
    ratio, log_ratio = jax.lax.stop_gradient((ratio, log_ratio))
    terms_t = (total_t, *jax.lax.stop_gradient((pg_loss_t, v_loss_t, entropy_t, kl_t)),
               # Low-variance estimator of KL(pi_old || pi) (Schulman 2020, "k3"), as cleanrl.
               (ratio - 1.0) - log_ratio,
               (jnp.abs(ratio - 1.0) > cfg.clip_eps).astype(jnp.float32),
               jax.lax.stop_gradient(v_tm1))
    mask = valid_t.astype(jnp.float32)
    return jnp.sum(mask * jnp.stack(terms_t), axis=-1) / jnp.maximum(mask.sum(), 1.0)


def ppo_loss(*args, **kwargs) -> tuple[Array, dict[str, Array]]:
    """`ppo_loss_terms` as (loss, {name: term}); same arguments."""
    terms = ppo_loss_terms(*args, **kwargs)
    return terms[0], dict(zip(PPO_LOSS_TERMS, terms))
