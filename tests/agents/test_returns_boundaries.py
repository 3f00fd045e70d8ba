"""Episode boundaries for agents.returns: a hand-drawn trajectory with a termination, a
time-limit truncation and EnvPool's reset steps, through fold_truncation -> vtrace and gae,
against hand-written returns and the NumPy references (tests/agents/returns_reference.py)."""

import jax.numpy as jnp
import numpy as np
import pytest

from agents import returns
from tests.agents.returns_reference import (_close, _f32, ref_fold_truncation, ref_gae,
                                            ref_vtrace)


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


def test_truncation_without_bootstrap_is_a_termination():
    """`bootstrap_truncation=False` (cleanrl's and cleanba's `done`): a truncated step gets no
    bootstrap and discount 0, exactly as if the env had terminated there."""
    values, r_t, terminated, truncated = _boundary_trajectory()
    v_t = jnp.asarray(values[1:])
    r_f, disc = returns.fold_truncation(jnp.asarray(r_t), v_t, jnp.asarray(terminated),
                                        jnp.asarray(truncated), GAMMA, bootstrap=False)
    merged = np.logical_or(terminated, truncated)
    ref_r, ref_d = ref_fold_truncation(r_t, values[1:], merged, np.zeros_like(truncated), GAMMA)
    _close(np.asarray(r_f), ref_r)
    _close(np.asarray(disc), ref_d)
    assert np.asarray(r_f)[TRUNC_STEP] == pytest.approx(r_t[TRUNC_STEP])  # no GAMMA * V
