"""IMPALA's V-trace actor-critic loss on one trajectory (Espeholt et al. 2018, sec. 4)."""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from agents import returns
from agents.impala.config import ImpalaConfig

Array = chex.Array


def vtrace_loss(
    logp_t: Array, entropy_t: Array, values: Array, behaviour_logp_t: Array, r_t: Array,
    terminated_t: Array, truncated_t: Array, valid_t: Array, cfg: ImpalaConfig,
) -> tuple[Array, dict[str, Array]]:
    """Loss for one trajectory of T steps.

    logp_t, entropy_t: learner policy log-prob of the taken actions and entropy, [T].
    values: learner values V(obs_0..obs_T), [T+1]. behaviour_logp_t: actor's log-probs, [T].
    valid_t: False on reset steps, which are left out of every term.
    """
    chex.assert_rank([logp_t, entropy_t, values, behaviour_logp_t, r_t], 1)
    chex.assert_equal_shape([logp_t, entropy_t, behaviour_logp_t, r_t, terminated_t,
                             truncated_t, valid_t])
    chex.assert_shape(values, (r_t.shape[0] + 1,))
    if cfg.reward_clip > 0:
        r_t = jnp.clip(r_t, -cfg.reward_clip, cfg.reward_clip)
    v_tm1, v_t = values[:-1], values[1:]
    r_t, discount_t = returns.fold_truncation(r_t, v_t, terminated_t, truncated_t, cfg.discount,
                                              cfg.bootstrap_truncation)
    log_rho_tm1 = jax.lax.stop_gradient(logp_t) - behaviour_logp_t
    rho_tm1 = jnp.exp(log_rho_tm1)
    vs, pg_adv = returns.vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, cfg.vtrace_lambda,
                                cfg.clip_rho, cfg.clip_pg_rho)
    mask = valid_t.astype(jnp.float32)
    count = jnp.maximum(mask.sum(), 1.0)
    pg_loss = -jnp.sum(mask * pg_adv * logp_t) / count
    baseline_loss = 0.5 * jnp.sum(mask * jnp.square(vs - v_tm1)) / count
    entropy = jnp.sum(mask * entropy_t) / count
    total = pg_loss + cfg.baseline_cost * baseline_loss - cfg.entropy_cost * entropy
    metrics = {"loss/total": total, "loss/policy": pg_loss, "loss/baseline": baseline_loss,
               "policy/entropy": entropy,
               "policy/rho_mean": jnp.sum(mask * rho_tm1) / count,
               # How far the learner's policy has moved from the actor's on these steps (0 when
               # they agree; policy lag shows here), and how often V-trace clips the weight.
               "policy/abs_log_rho": jnp.sum(mask * jnp.abs(log_rho_tm1)) / count,
               "policy/rho_clipped": jnp.sum(mask * (rho_tm1 > cfg.clip_rho)) / count,
               "value/mean": jnp.sum(mask * v_tm1) / count}
    return total, metrics
