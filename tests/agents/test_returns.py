"""Independent NumPy reference tests for `agents.returns`.

Every reference below is written directly from the papers' equations as an
explicit Python loop over time, in float64, and never calls rlax:

* V-trace (Espeholt et al. 2018, "IMPALA", eq. 1 and the policy-gradient term):
      v_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i c_i) rho_t delta_t
      delta_t = r_t + gamma_t V(x_{t+1}) - V(x_t)
      rho_t = min(clip_rho, pi/mu),  c_i = lambda * min(1, pi/mu)
      A^pg_s = min(clip_pg_rho, pi/mu) * (r_s + gamma_s v_{s+1} - V(x_s)),  v_T = V(x_T)
* GAE(lambda) (Schulman et al. 2016):
      A_t = delta_t + gamma_t lambda A_{t+1},  A_T = 0
* `fold_truncation` (EnvPool convention): the observation after a step that ends an
  episode is that episode's real final observation; the reset happens one step later on
  a "reset step" (action ignored, reward 0). On time-limit truncation the bootstrap
  gamma * V(final obs) is folded into the reward and the discount is zeroed, so no value
  flows across the episode boundary.

Layout: the references are in tests/agents/returns_reference.py; here
  2. fold_truncation: small explicit example
  3. vtrace: random off-policy data, on-policy == n-step return
  5. gae: reference loop, lambda=1 / lambda=0 identities
and in tests/agents/test_returns_boundaries.py, 4. episode boundaries (termination + truncation
+ reset steps) through fold_truncation -> vtrace and gae.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import returns
from tests.agents.returns_reference import (_close, _f32, _random_trajectory, ref_fold_truncation,
                                            ref_gae, ref_n_step_return, ref_vtrace)


# ---------------------------------------------------------------------------------------
# 2. fold_truncation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag_dtype", [np.bool_, np.float32], ids=["bool_flags", "float_flags"])
def test_fold_truncation_explicit_example(flag_dtype):
    gamma = 0.5
    r_t = _f32([1.0, 2.0, 3.0, 4.0])
    v_t = _f32([10.0, 20.0, 30.0, 40.0])
    terminated = np.array([0, 1, 0, 0], dtype=flag_dtype)
    truncated = np.array([0, 0, 1, 0], dtype=flag_dtype)

    r_out, disc_out = returns.fold_truncation(
        jnp.asarray(r_t), jnp.asarray(v_t), jnp.asarray(terminated), jnp.asarray(truncated), gamma
    )

    # step 0: ordinary step; step 1: termination, no bootstrap;
    # step 2: truncation, r + gamma * V(final obs) = 3 + 0.5 * 30; step 3: ordinary.
    _close(r_out, [1.0, 2.0, 18.0, 4.0])
    _close(disc_out, [0.5, 0.0, 0.0, 0.5])
    # Cross-check against the loop reference.
    ref_r, ref_d = ref_fold_truncation(r_t, v_t, terminated, truncated, gamma)
    _close(r_out, ref_r)
    _close(disc_out, ref_d)


def test_fold_truncation_stops_gradient_through_bootstrap_value():
    r_t = jnp.asarray(_f32([1.0, 2.0, 3.0]))
    v_t = jnp.asarray(_f32([5.0, 6.0, 7.0]))
    terminated = jnp.asarray([False, False, False])
    truncated = jnp.asarray([False, True, False])

    def loss(v):
        r_out, disc = returns.fold_truncation(r_t, v, terminated, truncated, 0.9)
        return jnp.sum(r_out) + jnp.sum(disc * v)

    grad = jax.grad(loss)(v_t)
    # Only the explicit `disc * v` term carries gradient; the folded bootstrap does not.
    _close(grad, [0.9, 0.0, 0.9])


# ---------------------------------------------------------------------------------------
# 3. vtrace
# ---------------------------------------------------------------------------------------


def test_reference_vtrace_matches_recursive_form():
    """Self-check of the sum-form reference against the recursive form
    v_s - V(x_s) = rho_s delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1}))."""
    v_tm1, v_t, r_t, discount_t, rho_tm1 = _random_trajectory(seed=1)
    lam = 0.9
    vs, _ = ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=lam)
    v_tm1, v_t, r_t, discount_t, rho_tm1 = (
        a.astype(np.float64) for a in (v_tm1, v_t, r_t, discount_t, rho_tm1)
    )
    acc = 0.0
    for s in reversed(range(len(r_t))):
        delta = r_t[s] + discount_t[s] * v_t[s] - v_tm1[s]
        acc = min(1.0, rho_tm1[s]) * delta + discount_t[s] * lam * min(1.0, rho_tm1[s]) * acc
        np.testing.assert_allclose(vs[s], v_tm1[s] + acc, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lambda_", [1.0, 0.9])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vtrace_random_off_policy(seed, lambda_):
    """Targets, and the pg advantage = min(clip_pg_rho, rho_s) (r_s + gamma_s v_{s+1} -
    V(x_s)) with v_{s+1} the V-trace target (the paper's definition, for every lambda)."""
    v_tm1, v_t, r_t, discount_t, rho_tm1 = _random_trajectory(seed)
    vs, pg = returns.vtrace(
        jnp.asarray(v_tm1), jnp.asarray(v_t), jnp.asarray(r_t), jnp.asarray(discount_t),
        jnp.asarray(rho_tm1), lambda_=lambda_,
    )
    ref_vs, ref_pg = ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=lambda_)
    _close(vs, ref_vs)
    _close(pg, ref_pg)


@pytest.mark.parametrize("lambda_", [1.0, 0.9])
def test_vtrace_non_default_clip_thresholds(lambda_):
    v_tm1, v_t, r_t, discount_t, rho_tm1 = _random_trajectory(seed=3)
    rho_tm1 = _f32([2.5, 0.3, 1.7, 1.2, 0.8, 3.0, 0.5])
    kwargs = dict(lambda_=lambda_, clip_rho=2.0, clip_pg_rho=1.5)
    vs, pg = returns.vtrace(
        jnp.asarray(v_tm1), jnp.asarray(v_t), jnp.asarray(r_t), jnp.asarray(discount_t),
        jnp.asarray(rho_tm1), **kwargs,
    )
    ref_vs, ref_pg = ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, **kwargs)
    _close(vs, ref_vs)
    _close(pg, ref_pg)


def test_vtrace_on_policy_equals_n_step_return():
    """rho = 1, lambda = 1: v_s is the discounted return bootstrapped from V(x_T)."""
    T, gamma = 7, 0.95
    rng = np.random.default_rng(7)
    values = _f32(rng.normal(size=T + 1))
    r_t = _f32(rng.normal(size=T))
    discount_t = np.full(T, gamma, dtype=np.float32)
    rho_tm1 = np.ones(T, dtype=np.float32)

    vs, pg = returns.vtrace(
        jnp.asarray(values[:-1]), jnp.asarray(values[1:]), jnp.asarray(r_t),
        jnp.asarray(discount_t), jnp.asarray(rho_tm1), lambda_=1.0,
    )
    G = ref_n_step_return(r_t, discount_t, bootstrap=values[T])
    _close(vs, G)
    # Direct closed form for the first step, independent of the helper.
    G0 = sum(gamma**k * float(r_t[k]) for k in range(T)) + gamma**T * float(values[T])
    _close(np.asarray(vs)[0], G0)
    # On-policy, lambda = 1: r_s + gamma v_{s+1} = v_s, so A^pg_s = v_s - V(x_s).
    _close(pg, G - values[:-1].astype(np.float64))


# ---------------------------------------------------------------------------------------
# 5. GAE
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("lambda_", [0.0, 0.5, 0.95, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_gae_random_matches_reference_loop(seed, lambda_):
    v_tm1, v_t, r_t, discount_t, _ = _random_trajectory(seed)
    adv = returns.gae(
        jnp.asarray(r_t), jnp.asarray(discount_t), jnp.asarray(v_tm1), jnp.asarray(v_t), lambda_
    )
    _close(adv, ref_gae(r_t, discount_t, v_tm1, v_t, lambda_))


def test_gae_lambda_one_is_return_minus_value_and_lambda_zero_is_td_error():
    v_tm1, v_t, r_t, discount_t, _ = _random_trajectory(seed=4)
    args = (jnp.asarray(r_t), jnp.asarray(discount_t), jnp.asarray(v_tm1), jnp.asarray(v_t))
    G = ref_n_step_return(r_t, discount_t, bootstrap=v_t[-1])
    _close(returns.gae(*args, 1.0), G - v_tm1.astype(np.float64))
    td = r_t.astype(np.float64) + discount_t * v_t.astype(np.float64) - v_tm1
    _close(returns.gae(*args, 0.0), td)
