"""Per-trajectory return targets shared by the agents: truncation handling, V-trace, GAE.

Every function works on ONE trajectory of time-major arrays of shape [T] (rlax style); the
learner vmaps them over the environment axis.

Episode boundaries follow EnvPool's convention, which the whole runtime uses: after a step that
ends an episode the environment returns that episode's real final observation, and resets one
step later (a "reset step" whose action is ignored and whose reward is 0). Hence v_t[i] =
V(obs_{i+1}) is the value of the true final observation whenever step i ended an episode, which
is exactly what a time-limit truncation must bootstrap from.
"""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import rlax

Array = chex.Array


def fold_truncation(
    r_t: Array, v_t: Array, terminated_t: Array, truncated_t: Array, gamma: float,
    bootstrap: bool = True,
) -> tuple[Array, Array]:
    """Returns rewards and discounts with the truncation bootstrap folded into the reward.

    A truncated step gets r + gamma * V(final obs) and discount 0; a terminated step gets r and
    discount 0; other steps keep r and gamma. With discount 0 at every episode end, nothing flows
    from the reset step (final obs -> first obs of the next episode) back into the episode.

    `bootstrap=False` treats a truncated step as a terminated one (r, discount 0): the target
    of implementations whose `done` merges both, such as cleanrl's ppo_atari_envpool.py and
    cleanba (the agents' `bootstrap_truncation` field; docs/results.md says where it is used).
    """
    chex.assert_rank([r_t, v_t, terminated_t, truncated_t], 1)
    chex.assert_equal_shape([r_t, v_t, terminated_t, truncated_t])
    # A step that is both terminated and truncated is terminal: no bootstrap.
    truncated = jnp.logical_and(truncated_t, jnp.logical_not(terminated_t)).astype(jnp.float32)
    if not bootstrap:
        truncated = jnp.zeros_like(truncated)
    done = jnp.logical_or(terminated_t, truncated_t).astype(jnp.float32)
    r_folded = r_t + gamma * truncated * jax.lax.stop_gradient(v_t)
    return r_folded, gamma * (1.0 - done)


def vtrace(
    v_tm1: Array,
    v_t: Array,
    r_t: Array,
    discount_t: Array,
    rho_tm1: Array,
    lambda_: float = 1.0,
    clip_rho: float = 1.0,
    clip_pg_rho: float = 1.0,
) -> tuple[Array, Array]:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, eq. 1 and sec. 4.2).

    Returns (vs, pg_advantage), both [T] and without gradient. rlax computes the targets
    (c_s = lambda * min(1, rho_s) is rlax's trace coefficient). The advantage is the paper's
    min(clip_pg_rho, rho_s) * (r_s + discount_s * vs_{s+1} - V(x_s)); rlax's own pg_advantage
    mixes lambda into the bootstrap, which differs from the paper when lambda < 1.
    """
    chex.assert_rank([v_tm1, v_t, r_t, discount_t, rho_tm1], 1)
    out = rlax.vtrace_td_error_and_advantage(
        v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=lambda_,
        clip_rho_threshold=clip_rho, clip_pg_rho_threshold=clip_pg_rho,
        stop_target_gradients=True)
    vs = out.errors + v_tm1
    vs_t = jnp.concatenate([vs[1:], v_t[-1:]])
    pg_adv = jnp.minimum(clip_pg_rho, rho_tm1) * (r_t + discount_t * vs_t - v_tm1)
    return jax.lax.stop_gradient(vs), jax.lax.stop_gradient(pg_adv)


def gae(r_t: Array, discount_t: Array, v_tm1: Array, v_t: Array, lambda_: float) -> Array:
    """GAE(lambda) advantages (Schulman et al. 2016) with per-step discounts, no gradient."""
    chex.assert_rank([r_t, discount_t, v_tm1, v_t], 1)
    adv = rlax.truncated_generalized_advantage_estimation(
        r_t, discount_t, lambda_, jnp.concatenate([v_tm1, v_t[-1:]]))
    # rlax bootstraps step i from values[i+1]; within a trajectory V(x_{i+1}) == v_tm1[i+1]
    # except after episode ends, where discount_t is 0 and the value is not used.
    return jax.lax.stop_gradient(adv)
