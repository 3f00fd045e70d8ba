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

Layout:
  1. reference implementations (NumPy, loops)
  2. fold_truncation: small explicit example
  3. vtrace: random off-policy data, on-policy == n-step return
  4. episode boundaries (termination + truncation + reset steps): fold_truncation -> vtrace
  5. gae: reference loop, lambda=1 / lambda=0 identities, boundaries via fold_truncation
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import returns

RTOL = 1e-5
# Advantages can be close to zero, where a pure relative tolerance is meaningless for
# float32 results; a tiny absolute tolerance covers that.
ATOL = 1e-5


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def _close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------
# 1. NumPy references (explicit loops, float64).
# ---------------------------------------------------------------------------------------


def ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=1.0, clip_rho=1.0, clip_pg_rho=1.0):
    """V-trace targets and pg advantages, straight from the sum form of eq. 1."""
    v_tm1, v_t, r_t, discount_t, rho_tm1 = (
        np.asarray(a, dtype=np.float64) for a in (v_tm1, v_t, r_t, discount_t, rho_tm1)
    )
    T = len(r_t)
    vs = np.zeros(T)
    for s in range(T):
        total = 0.0
        for t in range(s, T):
            trace = 1.0  # prod_{i=s}^{t-1} discount_i * c_i
            for i in range(s, t):
                trace *= discount_t[i] * lambda_ * min(1.0, rho_tm1[i])
            delta_t = r_t[t] + discount_t[t] * v_t[t] - v_tm1[t]
            total += trace * min(clip_rho, rho_tm1[t]) * delta_t
        vs[s] = v_tm1[s] + total

    pg = np.zeros(T)
    for s in range(T):
        v_next = vs[s + 1] if s + 1 < T else v_t[T - 1]  # v_T = V(x_T)
        pg[s] = min(clip_pg_rho, rho_tm1[s]) * (r_t[s] + discount_t[s] * v_next - v_tm1[s])
    return vs, pg


def ref_n_step_return(r_t, discount_t, bootstrap):
    """G_s = sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i) r_t + (prod_{i=s}^{T-1} gamma_i) V(x_T)."""
    r_t = np.asarray(r_t, dtype=np.float64)
    discount_t = np.asarray(discount_t, dtype=np.float64)
    T = len(r_t)
    G = np.zeros(T)
    for s in range(T):
        total, disc = 0.0, 1.0
        for t in range(s, T):
            total += disc * r_t[t]
            disc *= discount_t[t]
        G[s] = total + disc * float(bootstrap)
    return G


def ref_gae(r_t, discount_t, v_tm1, v_t, lambda_):
    """A_t = delta_t + gamma_t * lambda * A_{t+1}, A_T = 0."""
    r_t, discount_t, v_tm1, v_t = (np.asarray(a, dtype=np.float64) for a in (r_t, discount_t, v_tm1, v_t))
    T = len(r_t)
    adv = np.zeros(T)
    next_adv = 0.0
    for t in reversed(range(T)):
        delta = r_t[t] + discount_t[t] * v_t[t] - v_tm1[t]
        next_adv = delta + discount_t[t] * lambda_ * next_adv
        adv[t] = next_adv
    return adv


def ref_fold_truncation(r_t, v_t, terminated_t, truncated_t, gamma):
    T = len(r_t)
    r_out, disc_out = np.zeros(T), np.zeros(T)
    for i in range(T):
        r_out[i] = r_t[i] + (gamma * v_t[i] if truncated_t[i] else 0.0)
        disc_out[i] = 0.0 if (terminated_t[i] or truncated_t[i]) else gamma
    return r_out, disc_out


def _random_trajectory(seed, T=7, gamma=0.9):
    rng = np.random.default_rng(seed)
    values = _f32(rng.normal(size=T + 1))  # V(x_0) .. V(x_T)
    r_t = _f32(rng.normal(size=T))
    discount_t = np.full(T, gamma, dtype=np.float32)
    discount_t[T // 2] = 0.0  # one episode end inside the trajectory
    # Importance ratios on both sides of 1 (and of the clip thresholds).
    rho_tm1 = _f32(np.exp(rng.uniform(-1.5, 1.5, size=T)))
    rho_tm1[0], rho_tm1[1] = 2.5, 0.3
    assert (rho_tm1 > 1).any() and (rho_tm1 < 1).any()
    return values[:-1], values[1:], r_t, discount_t, rho_tm1


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
def test_vtrace_targets_random_off_policy(seed, lambda_):
    v_tm1, v_t, r_t, discount_t, rho_tm1 = _random_trajectory(seed)
    vs, _ = returns.vtrace(
        jnp.asarray(v_tm1), jnp.asarray(v_t), jnp.asarray(r_t), jnp.asarray(discount_t),
        jnp.asarray(rho_tm1), lambda_=lambda_,
    )
    ref_vs, _ = ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=lambda_)
    _close(vs, ref_vs)


@pytest.mark.parametrize("lambda_", [1.0, 0.9])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vtrace_pg_advantage_random_off_policy(seed, lambda_):
    """pg advantage = min(clip_pg_rho, rho_s) (r_s + gamma_s v_{s+1} - V(x_s)), v_{s+1} the
    V-trace target (the paper's definition, for every lambda)."""
    v_tm1, v_t, r_t, discount_t, rho_tm1 = _random_trajectory(seed)
    _, pg = returns.vtrace(
        jnp.asarray(v_tm1), jnp.asarray(v_t), jnp.asarray(r_t), jnp.asarray(discount_t),
        jnp.asarray(rho_tm1), lambda_=lambda_,
    )
    _, ref_pg = ref_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_=lambda_)
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
# 4. Episode boundaries: fold_truncation -> vtrace
# ---------------------------------------------------------------------------------------
#
#   step i :   0    1    2    3    4    5    6    7
#   obs x_i:  e1   e1   e1  F1    e2   e2  F2    e3      x_8 = e3 (bootstrap obs)
#   flags  :            term reset      trunc reset
#
# Step i takes obs x_i and yields r_i, x_{i+1}. Step 2 terminates episode 1, so x_3 is
# episode 1's final obs F1; step 3 is the reset step (action ignored, reward 0) whose next
# obs x_4 starts episode 2. Step 5 is a time-limit truncation: x_6 = F2 is episode 2's
# final obs and V(F2) = values[6]; step 6 is the reset step. Episode 3 (step 7) is still
# running at the end of the trajectory and bootstraps from V(x_8) = values[8].

GAMMA = 0.9
TERM_STEP, TRUNC_STEP = 2, 5
RESET_STEPS = (3, 6)
EPISODE_STEPS = (0, 1, 2, 4, 5, 7)


def _boundary_trajectory():
    values = _f32([0.5, -1.0, 2.0, 7.0, 0.25, 1.5, 3.0, -0.75, 4.0])  # V(x_0)..V(x_8)
    r_t = _f32([1.0, 2.0, 3.0, 0.0, -1.0, 0.5, 0.0, 2.0])  # reset steps have reward 0
    terminated = np.zeros(8, dtype=bool)
    truncated = np.zeros(8, dtype=bool)
    terminated[TERM_STEP] = True
    truncated[TRUNC_STEP] = True
    return values, r_t, terminated, truncated


def _hand_returns(values, r_t, g=GAMMA):
    """Returns at the non-reset steps, written out by hand."""
    r = r_t.astype(np.float64)
    v = values.astype(np.float64)
    return {
        # Episode 1 terminates at step 2: plain discounted sums, no bootstrap.
        0: r[0] + g * r[1] + g**2 * r[2],
        1: r[1] + g * r[2],
        2: r[2],
        # Episode 2 truncated at step 5: bootstrap from V(F2) = values[6].
        4: r[4] + g * r[5] + g**2 * v[6],
        5: r[5] + g * v[6],
        # Episode 3 is unfinished: bootstrap from V(x_T) = values[8].
        7: r[7] + g * v[8],
    }


def _fold_and_vtrace(values, r_t, terminated, truncated, rho=None, lambda_=1.0):
    v_tm1, v_t = jnp.asarray(values[:-1]), jnp.asarray(values[1:])
    r_f, disc = returns.fold_truncation(
        jnp.asarray(r_t), v_t, jnp.asarray(terminated), jnp.asarray(truncated), GAMMA
    )
    if rho is None:
        rho = np.ones(len(r_t), dtype=np.float32)
    vs, pg = returns.vtrace(v_tm1, v_t, r_f, disc, jnp.asarray(rho), lambda_=lambda_)
    return np.asarray(r_f), np.asarray(disc), np.asarray(vs), np.asarray(pg)


def test_boundary_fold_truncation_outputs():
    values, r_t, terminated, truncated = _boundary_trajectory()
    r_f, disc, _, _ = _fold_and_vtrace(values, r_t, terminated, truncated)
    expected_r = r_t.astype(np.float64).copy()
    expected_r[TRUNC_STEP] += GAMMA * values[6]
    expected_disc = np.full(8, GAMMA)
    expected_disc[[TERM_STEP, TRUNC_STEP]] = 0.0
    _close(r_f, expected_r)
    _close(disc, expected_disc)


def test_boundary_vtrace_on_policy_targets_match_hand_returns():
    values, r_t, terminated, truncated = _boundary_trajectory()
    _, _, vs, pg = _fold_and_vtrace(values, r_t, terminated, truncated)
    expected = _hand_returns(values, r_t)
    for step in EPISODE_STEPS:
        _close(vs[step], expected[step])
        # On-policy, lambda = 1: A^pg_s = v_s - V(x_s).
        _close(pg[step], expected[step] - float(values[step]))


def test_boundary_no_value_leaks_across_episode_end():
    """Targets of finished episodes must not depend on anything after their last step:
    not V(F1) (terminal obs), nor the reset steps, nor later episodes. Off-policy rhos
    are used so that the traces would carry a leak if the discount were not zero."""
    values, r_t, terminated, truncated = _boundary_trajectory()
    rho = _f32([0.7, 1.3, 0.9, 2.0, 0.6, 1.1, 3.0, 0.8])
    _, _, vs, pg = _fold_and_vtrace(values, r_t, terminated, truncated, rho=rho, lambda_=0.9)

    values2, r2 = values.copy(), r_t.copy()
    values2[3] += 100.0  # V(F1), the terminal obs of episode 1
    values2[4] -= 50.0  # first obs of episode 2
    values2[7] += 30.0  # first obs of episode 3
    values2[8] -= 20.0  # bootstrap obs
    r2[3] = 5.0  # reset-step rewards (would be 0 in practice)
    r2[6] = -5.0
    r2[7] += 10.0
    rho2 = rho.copy()
    rho2[[3, 6, 7]] = [0.1, 0.2, 4.0]
    _, _, vs2, pg2 = _fold_and_vtrace(values2, r2, terminated, truncated, rho=rho2, lambda_=0.9)

    ep1, ep2 = [0, 1, 2], [5]  # step 4's target includes V(x_4) - changed above - as its baseline
    _close(vs2[ep1], vs[ep1].astype(np.float64))
    _close(pg2[ep1], pg[ep1].astype(np.float64))
    _close(vs2[ep2], vs[ep2].astype(np.float64))
    _close(pg2[ep2], pg[ep2].astype(np.float64))


def test_boundary_vtrace_off_policy_matches_reference():
    values, r_t, terminated, truncated = _boundary_trajectory()
    rho = _f32([0.7, 1.3, 0.9, 2.0, 0.6, 1.1, 3.0, 0.8])
    r_f, disc, vs, pg = _fold_and_vtrace(values, r_t, terminated, truncated, rho=rho, lambda_=0.9)
    ref_r, ref_d = ref_fold_truncation(r_t, values[1:], terminated, truncated, GAMMA)
    ref_vs, ref_pg = ref_vtrace(values[:-1], values[1:], ref_r, ref_d, rho, lambda_=0.9)
    idx = list(EPISODE_STEPS)
    _close(vs[idx], ref_vs[idx])
    _close(pg[idx], ref_pg[idx])


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


def test_gae_with_termination_and_truncation():
    values, r_t, terminated, truncated = _boundary_trajectory()
    v_tm1, v_t = jnp.asarray(values[:-1]), jnp.asarray(values[1:])
    r_f, disc = returns.fold_truncation(
        jnp.asarray(r_t), v_t, jnp.asarray(terminated), jnp.asarray(truncated), GAMMA
    )
    ref_r, ref_d = ref_fold_truncation(r_t, values[1:], terminated, truncated, GAMMA)
    idx = list(EPISODE_STEPS)

    for lam in (0.0, 0.7, 1.0):
        adv = np.asarray(returns.gae(r_f, disc, v_tm1, v_t, lam))
        ref = ref_gae(ref_r, ref_d, values[:-1], values[1:], lam)
        _close(adv[idx], ref[idx])

    # lambda = 1: advantage = hand-computed return - V(x_s) at every non-reset step.
    adv1 = np.asarray(returns.gae(r_f, disc, v_tm1, v_t, 1.0))
    expected = _hand_returns(values, r_t)
    for step in EPISODE_STEPS:
        _close(adv1[step], expected[step] - float(values[step]))

    # lambda = 0: one-step TD error; zero bootstrap at the termination, V(F2) at truncation.
    adv0 = np.asarray(returns.gae(r_f, disc, v_tm1, v_t, 0.0))
    v = values.astype(np.float64)
    _close(adv0[TERM_STEP], r_t[TERM_STEP] - v[TERM_STEP])
    _close(adv0[TRUNC_STEP], r_t[TRUNC_STEP] + GAMMA * v[6] - v[TRUNC_STEP])
    _close(adv0[7], r_t[7] + GAMMA * v[8] - v[7])
