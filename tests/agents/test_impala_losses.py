"""IMPALA's V-trace loss (agents/impala/losses.py) against hand-worked numbers and an
independent float64 NumPy reference, values and gradients.

The reference is written from Espeholt et al. 2018 ("IMPALA", sec. 4), per valid step s:
    v_s  = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) rho_t delta_t,
           delta_t = r_t + gamma_t V(x_{t+1}) - V(x_t)
    rho_t = min(rho_bar, pi/mu),  c_i = lambda * min(c_bar = 1, pi/mu)
    policy gradient   A_s = min(rho_pg_bar, pi/mu) (r_s + gamma_s v_{s+1} - V(x_s)),  v_T = V(x_T)
    loss = mean_s[-A_s log pi(a_s|x_s)] + baseline_cost * mean_s[0.5 (v_s - V(x_s))^2]
           - entropy_cost * mean_s[H(pi(.|x_s))]
where the targets v_s and A_s carry no gradient (the paper's update direction), rewards are
clipped to [-c, c] first, a termination zeroes gamma_t, a time-limit truncation zeroes gamma_t
and adds gamma V(final obs) to r_t, and reset steps (valid False) are left out of every mean.
V-trace and the truncation fold reuse tests/agents/returns_reference.py (explicit loops, no
rlax); the gradients are derived by hand below and themselves checked by finite differences.
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.impala.config import ImpalaConfig
from agents.impala.losses import vtrace_loss
from tests.agents.returns_reference import ref_fold_truncation, ref_vtrace


def _f32(x):
    return jnp.asarray(x, dtype=jnp.float32)


# ---------------------------------------------------------------------------------------
# Hand-worked example, T = 4, gamma = 0.5, lambda = 1, rho_bar = c_bar = rho_pg_bar = 1,
# rewards clipped to [-1, 1].
#
#   step s :      0         1          2            3
#   obs x_s:     e1        e1         F1 (final)   e2          x_4 = F2 (final obs of e2)
#   flags  :             terminated  reset step   truncated
#
#   V(x_0..x_4) = [1, 2, 7, 4, 6]
#   r           = [2, 0.5, 0, -3]  -> clipped [1, 0.5, 0, -1]
#   pi(a_s)     = [0.4, 0.25, 0.6, 0.2], mu(a_s) = [0.2, 0.5, 0.2, 0.8]
#   rho = pi/mu = [2, 0.5, 3, 0.25]  -> min(1, rho) = [1, 0.5, 1, 0.25] (= rho_s = c_s)
# Truncation at step 3: r_3 = -1 + 0.5 * V(x_4) = 2, gamma_3 = 0; termination: gamma_1 = 0.
#   gamma_s = [0.5, 0, 0.5, 0]
#   delta   = [1 + 0.5*2 - 1, 0.5 - 2, 0 + 0.5*4 - 7, 2 - 4] = [1, -1.5, -5, -2]
# Backwards, v_s - V(x_s) = rho_s delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})):
#   s=3: 0.25 * -2                 = -0.5    v_3 = 3.5
#   s=2: -5 + 0.5 * 1 * -0.5       = -5.25   v_2 = 1.75   (reset step: masked)
#   s=1: 0.5 * -1.5 + 0            = -0.75   v_1 = 1.25
#   s=0: 1 + 0.5 * 1 * -0.75       = 0.625   v_0 = 1.625
# Policy-gradient advantages A_s = min(1, rho_s) (r_s + gamma_s v_{s+1} - V(x_s)):
#   A_0 = 1 * (1 + 0.5 * 1.25 - 1)   = 0.625
#   A_1 = 0.5 * (0.5 + 0 - 2)         = -0.75
#   A_3 = 0.25 * (2 + 0 - 4)          = -0.5    (A_2 = -5.25 is masked)
# Means over the 3 valid steps:
#   policy   = -(0.625 ln 0.4 - 0.75 ln 0.25 - 0.5 ln 0.2) / 3      = -0.4239194...
#   baseline = 0.5 * (0.625^2 + 0.75^2 + 0.5^2) / 3 = 0.5 * 1.203125 / 3 = 0.2005208...
#   entropy  = (1.0 + 0.8 + 0.6) / 3 = 0.8   (the reset step's 9.0 is masked)
# ---------------------------------------------------------------------------------------
HAND_CFG = ImpalaConfig(discount=0.5, vtrace_lambda=1.0, clip_rho=1.0, clip_pg_rho=1.0,
                        baseline_cost=0.5, entropy_cost=0.1, reward_clip=1.0)
VALUES = np.array([1.0, 2.0, 7.0, 4.0, 6.0])
REWARD = np.array([2.0, 0.5, 0.0, -3.0])
PI = np.array([0.4, 0.25, 0.6, 0.2])
MU = np.array([0.2, 0.5, 0.2, 0.8])
ENTROPY = np.array([1.0, 0.8, 9.0, 0.6])
TERM = np.array([False, True, False, False])
TRUNC = np.array([False, False, False, True])
VALID = np.array([True, True, False, True])
HAND_VS = np.array([1.625, 1.25, 1.75, 3.5])
HAND_ADV = np.array([0.625, -0.75, -5.25, -0.5])
HAND_PG = -(0.625 * np.log(0.4) - 0.75 * np.log(0.25) - 0.5 * np.log(0.2)) / 3
HAND_BASELINE = 0.5 * (0.625 ** 2 + 0.75 ** 2 + 0.5 ** 2) / 3
HAND_ENTROPY = 0.8


def _hand(cfg=HAND_CFG, **overrides):
    args = dict(logp_t=np.log(PI), entropy_t=ENTROPY, values=VALUES,
                behaviour_logp_t=np.log(MU), r_t=REWARD, terminated_t=TERM, truncated_t=TRUNC,
                valid_t=VALID)
    args.update(overrides)
    args = {k: (jnp.asarray(v) if v.dtype == bool else _f32(v)) for k, v in args.items()}
    return vtrace_loss(**args, cfg=cfg)


def test_hand_worked_example():
    total, m = _hand()
    assert abs(HAND_PG - (-0.4239194)) < 1e-6 and abs(HAND_BASELINE - 0.2005208) < 1e-6
    np.testing.assert_allclose(m["loss/policy"], HAND_PG, rtol=1e-6)
    np.testing.assert_allclose(m["loss/baseline"], HAND_BASELINE, rtol=1e-6)
    np.testing.assert_allclose(m["policy/entropy"], HAND_ENTROPY, rtol=1e-6)
    # The entropy is a bonus: it lowers the loss (a flipped sign would add 2 * 0.1 * 0.8).
    np.testing.assert_allclose(total, HAND_PG + 0.5 * HAND_BASELINE - 0.1 * HAND_ENTROPY,
                               rtol=1e-6)
    np.testing.assert_allclose(m["policy/rho_mean"], (2.0 + 0.5 + 0.25) / 3, rtol=1e-6)
    # |log rho| = log 2, log 2, log 4 on the valid steps; only rho = 2 exceeds clip_rho = 1.
    np.testing.assert_allclose(m["policy/abs_log_rho"], 4 * np.log(2.0) / 3, rtol=1e-6)
    np.testing.assert_allclose(m["policy/rho_clipped"], 1 / 3, rtol=1e-6)
    np.testing.assert_allclose(m["value/mean"], (1.0 + 2.0 + 4.0) / 3, rtol=1e-6)


def test_hand_worked_gradients():
    """d/d log pi(a_s) = -A_s / 3; d/dV(x_s) = baseline_cost (V(x_s) - v_s) / 3;
    d/dH_s = -entropy_cost / 3; all zero on the reset step, and no gradient reaches the
    bootstrap value V(x_4) (the truncation target is fixed) or through rho."""
    def total(logp, entropy, values):
        return _hand(logp_t=logp, entropy_t=entropy, values=values)[0]

    g_logp, g_ent, g_v = jax.grad(total, argnums=(0, 1, 2))(
        _f32(np.log(PI)), _f32(ENTROPY), _f32(VALUES))
    mask = VALID.astype(float)
    np.testing.assert_allclose(g_logp, -mask * HAND_ADV / 3, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g_ent, -0.1 * mask / 3, rtol=1e-6, atol=1e-7)
    expected_v = np.append(0.5 * mask * (VALUES[:4] - HAND_VS) / 3, 0.0)
    np.testing.assert_allclose(g_v, expected_v, rtol=1e-6, atol=1e-7)


def test_hand_worked_lambda_half():
    """lambda = 0.5 halves the traces: c = 0.5 * min(1, rho) = [0.5, 0.25, 0.5, 0.125].
    v_3 - V = -0.5 (unchanged), v_1 - V = -0.75 (the termination cuts the trace),
    v_0 - V = 1 + 0.5 * 0.5 * -0.75 = 0.8125; A_0 uses v_1, which is unchanged."""
    _, m = _hand(dataclasses.replace(HAND_CFG, vtrace_lambda=0.5))
    np.testing.assert_allclose(m["loss/baseline"], 0.5 * (0.8125 ** 2 + 0.75 ** 2 + 0.5 ** 2) / 3,
                               rtol=1e-6)
    np.testing.assert_allclose(m["loss/policy"], HAND_PG, rtol=1e-6)


def test_hand_worked_without_reward_clipping():
    """reward_clip = 0 keeps r = [2, 0.5, 0, -3]: delta_0 = 2, truncation r_3 = -3 + 3 = 0,
    delta_3 = -4 -> v_3 - V = -1; v_0 - V = 2 + 0.5 * -0.75 = 1.625.
    A_0 = 2 + 0.5 * 1.25 - 1 = 1.625, A_3 = 0.25 * (0 - 4) = -1."""
    _, m = _hand(dataclasses.replace(HAND_CFG, reward_clip=0.0))
    np.testing.assert_allclose(m["loss/baseline"], 0.5 * (1.625 ** 2 + 0.75 ** 2 + 1.0) / 3,
                               rtol=1e-6)
    pg = -(1.625 * np.log(0.4) - 0.75 * np.log(0.25) - 1.0 * np.log(0.2)) / 3
    np.testing.assert_allclose(m["loss/policy"], pg, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Float64 reference with analytic gradients, on random trajectories with every boundary.
# ---------------------------------------------------------------------------------------


def ref_impala_loss(logits, actions, values, behaviour_logp, r_t, terminated_t, truncated_t,
                    valid_t, cfg: ImpalaConfig):
    """The paper's loss and its semi-gradient (targets fixed), float64 loops.

    logits [T, A] of the learner policy, actions [T], values V(x_0..x_T) [T+1].
    Returns (total, parts dict, d total / d logits [T, A], d total / d values [T+1]).
    """
    logits = np.asarray(logits, np.float64)
    values = np.asarray(values, np.float64)
    T, A = logits.shape
    shifted = logits - logits.max(1, keepdims=True)
    log_pi = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    pi = np.exp(log_pi)
    logp = np.array([log_pi[t, actions[t]] for t in range(T)])
    entropy = -(pi * log_pi).sum(1)
    r = np.asarray(r_t, np.float64)
    if cfg.reward_clip > 0:
        r = np.clip(r, -cfg.reward_clip, cfg.reward_clip)
    r, discount = ref_fold_truncation(r, values[1:], terminated_t, truncated_t, cfg.discount)
    rho = np.exp(logp - np.asarray(behaviour_logp, np.float64))
    vs, adv = ref_vtrace(values[:-1], values[1:], r, discount, rho, cfg.vtrace_lambda,
                         cfg.clip_rho, cfg.clip_pg_rho)
    m = np.asarray(valid_t, np.float64)
    n = max(m.sum(), 1.0)
    policy = -np.sum(m * adv * logp) / n
    baseline = 0.5 * np.sum(m * (vs - values[:-1]) ** 2) / n
    ent = np.sum(m * entropy) / n
    total = policy + cfg.baseline_cost * baseline - cfg.entropy_cost * ent

    g_logits = np.zeros((T, A))
    for t in range(T):
        onehot = np.eye(A)[actions[t]]
        d_logp = onehot - pi[t]                          # d log pi(a_t) / d logits
        d_entropy = -pi[t] * (log_pi[t] + entropy[t])    # d H / d logits
        g_logits[t] = m[t] / n * (-adv[t] * d_logp - cfg.entropy_cost * d_entropy)
    g_values = np.zeros(T + 1)
    g_values[:-1] = cfg.baseline_cost * m / n * (values[:-1] - vs)
    parts = {"loss/policy": policy, "loss/baseline": baseline, "policy/entropy": ent,
             "policy/rho_mean": np.sum(m * rho) / n,
             "policy/abs_log_rho": np.sum(m * np.abs(np.log(rho))) / n,
             "policy/rho_clipped": np.sum(m * (rho > cfg.clip_rho)) / n, "vs": vs, "adv": adv}
    return total, parts, g_logits, g_values


def _surrogate(logits, values, actions, adv, vs, valid, cfg):
    """The loss with the targets (adv, vs) held fixed: its gradient is the update direction."""
    log_pi = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    logp = log_pi[np.arange(len(actions)), actions]
    entropy = -(np.exp(log_pi) * log_pi).sum(1)
    m = valid.astype(np.float64)
    n = max(m.sum(), 1.0)
    return (-np.sum(m * adv * logp) / n
            + cfg.baseline_cost * 0.5 * np.sum(m * (vs - values[:-1]) ** 2) / n
            - cfg.entropy_cost * np.sum(m * entropy) / n)


def _trajectory(seed, T=12, A=3):
    """Random data with a termination, a truncation, a step that is both (terminal), each
    followed by its reset step (valid False, reward 0), and off-policy ratios on both sides
    of the clip thresholds."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(T, A))
    actions = rng.integers(0, A, T)
    values = rng.normal(size=T + 1) * 2.0
    r = rng.normal(size=T) * 2.0  # |r| > 1 often: reward clipping matters
    term, trunc = np.zeros(T, bool), np.zeros(T, bool)
    term[2], trunc[6], term[9], trunc[9] = True, True, True, True
    valid = np.ones(T, bool)
    valid[[3, 7, 10]] = False
    r[~valid] = 0.0
    log_pi = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    logp = log_pi[np.arange(T), actions]
    log_rho = rng.uniform(-1.5, 1.5, T)
    log_rho[[0, 4]] = np.log([2.5, 3.0])   # above rho_bar
    log_rho[[1, 5]] = np.log([0.3, 0.6])   # below 1: traces cut
    return logits, actions, values, logp - log_rho, r, term, trunc, valid


CONFIGS = {
    "paper_defaults": ImpalaConfig(discount=0.9, baseline_cost=0.5, entropy_cost=0.05),
    "lambda_and_clips": ImpalaConfig(discount=0.95, vtrace_lambda=0.7, clip_rho=1.8,
                                     clip_pg_rho=1.3, baseline_cost=0.25, entropy_cost=0.2,
                                     reward_clip=1.5),
    "no_reward_clip": ImpalaConfig(discount=0.8, vtrace_lambda=0.9, clip_rho=1.0,
                                   clip_pg_rho=2.0, baseline_cost=1.0, entropy_cost=0.01,
                                   reward_clip=0.0),
}


def _jax_total(logits, values, actions, behaviour_logp, r, term, trunc, valid, cfg):
    log_pi = jax.nn.log_softmax(logits)
    logp = jnp.take_along_axis(log_pi, actions[:, None], axis=1)[:, 0]
    entropy = -jnp.sum(jnp.exp(log_pi) * log_pi, axis=-1)
    return vtrace_loss(logp, entropy, values, behaviour_logp, r, term, trunc, valid, cfg)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_reference_gradient_matches_finite_differences(name, seed):
    """Checks the hand-derived gradient of the reference itself (targets held fixed)."""
    cfg = CONFIGS[name]
    logits, actions, values, blogp, r, term, trunc, valid = _trajectory(seed)
    _, parts, g_logits, g_values = ref_impala_loss(logits, actions, values, blogp, r, term,
                                                   trunc, valid, cfg)
    f = lambda lg, v: _surrogate(lg, v, actions, parts["adv"], parts["vs"], valid, cfg)
    eps = 1e-6
    fd_logits = np.zeros_like(logits)
    for idx in np.ndindex(logits.shape):
        d = np.zeros_like(logits)
        d[idx] = eps
        fd_logits[idx] = (f(logits + d, values) - f(logits - d, values)) / (2 * eps)
    fd_values = np.array([(f(logits, values + eps * e) - f(logits, values - eps * e)) / (2 * eps)
                          for e in np.eye(len(values))])
    np.testing.assert_allclose(g_logits, fd_logits, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_values, fd_values, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_loss_and_gradients_match_float64_reference(name, seed):
    cfg = CONFIGS[name]
    logits, actions, values, blogp, r, term, trunc, valid = _trajectory(seed)
    total, parts, g_logits, g_values = ref_impala_loss(logits, actions, values, blogp, r, term,
                                                       trunc, valid, cfg)
    # The data must exercise what the test claims to cover.
    rho = np.exp(np.take_along_axis(jax.nn.log_softmax(logits), actions[:, None], 1)[:, 0]
                 - blogp)
    assert (rho > cfg.clip_rho).any() and (rho < 1).any() and np.abs(r).max() > 1.5
    assert not np.all(parts["adv"] == 0) and not valid.all()

    # Float64 only inside this block (the x64 flag is global state otherwise).
    with jax.enable_x64(True):
        args = (jnp.asarray(logits), jnp.asarray(values), jnp.asarray(actions),
                jnp.asarray(blogp), jnp.asarray(r), jnp.asarray(term), jnp.asarray(trunc),
                jnp.asarray(valid))
        assert args[0].dtype == jnp.float64
        (out, metrics), (g_lg, g_v) = jax.value_and_grad(
            lambda lg, v: _jax_total(lg, v, *args[2:], cfg), argnums=(0, 1), has_aux=True)(
            args[0], args[1])
        out, metrics, g_lg, g_v = jax.device_get((out, metrics, g_lg, g_v))
    # The loss builds its mask and discounts in float32 (gamma = float32(0.9) etc.), so
    # agreement is to float32 precision of those constants, not to 1e-12.
    tol = dict(rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out, total, **tol)
    for key in ("loss/policy", "loss/baseline", "policy/entropy", "policy/rho_mean",
                "policy/abs_log_rho", "policy/rho_clipped"):
        np.testing.assert_allclose(metrics[key], parts[key], err_msg=key, **tol)
    np.testing.assert_allclose(g_lg, g_logits, **tol)
    np.testing.assert_allclose(g_v, g_values, **tol)
    # Reset steps get no gradient at all; the bootstrap value V(x_T) neither.
    assert np.all(g_lg[~valid] == 0) and np.all(g_v[:-1][~valid] == 0) and g_v[-1] == 0


def test_float32_loss_matches_reference():
    """The default (float32) path agrees with the reference to float32 precision."""
    cfg = CONFIGS["lambda_and_clips"]
    logits, actions, values, blogp, r, term, trunc, valid = _trajectory(3)
    total, _, g_logits, g_values = ref_impala_loss(logits, actions, values, blogp, r, term,
                                                   trunc, valid, cfg)
    (out, _), (g_lg, g_v) = jax.value_and_grad(
        lambda lg, v: _jax_total(lg, v, jnp.asarray(actions), _f32(blogp), _f32(r),
                                 jnp.asarray(term), jnp.asarray(trunc), jnp.asarray(valid), cfg),
        argnums=(0, 1), has_aux=True)(_f32(logits), _f32(values))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, total, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_lg, g_logits, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g_v, g_values, rtol=1e-4, atol=1e-6)


def test_all_steps_invalid_gives_zero_loss():
    """A trajectory of only reset steps contributes nothing (and no NaN from 0 / 0)."""
    total, m = _hand(valid_t=np.zeros(4, bool))
    assert float(total) == 0.0 and all(np.isfinite(float(v)) for v in m.values())
