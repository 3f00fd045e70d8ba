"""PPO loss and targets against hand-worked numbers and NumPy references.

References are written from the equations of Schulman et al. 2017 (clipped surrogate, eq. 7;
combined objective, eq. 9), the clipped value loss of the PPO2 baselines / cleanrl, and the
V-trace / GAE definitions pinned in tests/agents/test_returns.py.
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from agents import returns
from agents.ppo.config import PPOConfig
from agents.ppo.losses import gae_targets, ppo_loss, vtrace_targets

CFG = PPOConfig(clip_eps=0.2, value_clip_eps=0.5, value_cost=0.5, entropy_cost=0.01)


def _f32(x):
    return jnp.asarray(x, dtype=jnp.float32)


# A 5-step trajectory; step 4 is a reset step (valid=False) with garbage numbers that must
# not count. Ratios r = exp(logp - old_logp):
#   step 0: r = 1.5,  A = +2 -> clipped above: min(1.5*2, 1.2*2) = 2.4
#   step 1: r = 0.5,  A = -1 -> clipped below: min(0.5*-1, 0.8*-1) = -0.8
#   step 2: r = 1.1,  A = +1 -> inside the clip range: 1.1
#   step 3: r = 0.5,  A = +3 -> below the range, but the unclipped term is smaller: 1.5
RATIO = np.array([1.5, 0.5, 1.1, 0.5, 9.0])
ADV = np.array([2.0, -1.0, 1.0, 3.0, 100.0])
OLD_LOGP = np.log(np.array([0.4, 0.6, 0.5, 0.2, 0.1]))
LOGP = OLD_LOGP + np.log(RATIO)
VALID = np.array([True, True, True, True, False])
ENTROPY = np.array([0.6, 0.5, 0.4, 0.3, 50.0])
KL = np.array([0.01, 0.02, 0.03, 0.04, 7.0])
# Values: V, V_old, target G with value_clip_eps = 0.5:
#   step 0: V=1.0, V_old=0.0, G=3.0: clipped V_c=0.5; max((1-3)^2, (0.5-3)^2) = 6.25
#   step 1: V=2.0, V_old=1.8, G=1.0: inside the range, V_c = V: (2-1)^2 = 1.0
#   step 2: V=0.0, V_old=1.0, G=2.0: V_c=0.5; max(4, 2.25) = 4 (unclipped is worse)
#   step 3: V=4.0, V_old=2.0, G=3.0: V_c=2.5; max(1, 0.25) = 1
V = np.array([1.0, 2.0, 0.0, 4.0, -30.0])
OLD_V = np.array([0.0, 1.8, 1.0, 2.0, 0.0])
TARGET = np.array([3.0, 1.0, 2.0, 3.0, 99.0])


def _run(cfg=CFG, **overrides):
    args = dict(logp_t=LOGP, old_logp_t=OLD_LOGP, entropy_t=ENTROPY, kl_t=KL, v_tm1=V,
                old_v_tm1=OLD_V, adv_t=ADV, target_tm1=TARGET, valid_t=VALID)
    args.update(overrides)
    args = {k: (jnp.asarray(v) if k == "valid_t" else _f32(v)) for k, v in args.items()}
    return ppo_loss(**args, cfg=cfg)


def test_hand_worked_example():
    total, m = _run()
    pg = -(2.4 - 0.8 + 1.1 + 1.5) / 4            # = -1.05
    value = 0.5 * (6.25 + 1.0 + 4.0 + 1.0) / 4   # = 1.53125
    entropy = (0.6 + 0.5 + 0.4 + 0.3) / 4        # = 0.45
    np.testing.assert_allclose(m["loss/policy"], pg, rtol=1e-6)
    np.testing.assert_allclose(m["loss/value"], value, rtol=1e-6)
    np.testing.assert_allclose(m["policy/entropy"], entropy, rtol=1e-6)
    np.testing.assert_allclose(total, pg + 0.5 * value - 0.01 * entropy, rtol=1e-6)
    # Steps 0 and 1 are clipped (|r - 1| > 0.2); step 3 too (the flag counts the ratio).
    np.testing.assert_allclose(m["policy/clip_frac"], 3 / 4, rtol=1e-6)
    approx_kl = np.mean((RATIO[:4] - 1) - np.log(RATIO[:4]))
    np.testing.assert_allclose(m["policy/approx_kl"], approx_kl, rtol=1e-5)


def test_unclipped_value_loss_and_kl_penalty():
    cfg = dataclasses.replace(CFG, value_clip_eps=0.0, kl_cost=2.0)
    total, m = _run(cfg)
    value = 0.5 * (4.0 + 1.0 + 4.0 + 1.0) / 4
    kl = (0.01 + 0.02 + 0.03 + 0.04) / 4
    np.testing.assert_allclose(m["loss/value"], value, rtol=1e-6)
    np.testing.assert_allclose(m["policy/kl"], kl, rtol=1e-6)
    np.testing.assert_allclose(
        total, -1.05 + 0.5 * value - 0.01 * 0.45 + 2.0 * kl, rtol=1e-6)


def test_gradients_vanish_where_clipped():
    """d loss / d logp is zero on both clipped sides and r * A / n inside the range; d loss /
    d V is value_cost * (V - G) / n where the value clip does not win. The loss (the first
    term) is what the learner differentiates; the diagnostics carry no gradient."""
    def loss(**kw):
        return _run(**kw)[0]

    g = np.asarray(jax.grad(lambda logp: loss(logp_t=logp))(_f32(LOGP)))
    np.testing.assert_allclose(g, [0.0, 0.0, -1.1 * 1.0 / 4, -0.5 * 3.0 / 4, 0.0], atol=1e-7)

    gv = np.asarray(jax.grad(lambda v: loss(v_tm1=v))(_f32(V)))
    # Step 0: the clipped term wins and does not depend on V -> 0. Others: (V - G) / n.
    np.testing.assert_allclose(gv, 0.5 * np.array([0.0, 1.0 / 4, -2.0 / 4, 1.0 / 4, 0.0]),
                               atol=1e-7)

    ge = np.asarray(jax.grad(lambda h: loss(entropy_t=h))(_f32(ENTROPY)))
    np.testing.assert_allclose(ge, -0.01 * VALID / 4, atol=1e-9)
    gk = np.asarray(jax.grad(lambda k: loss(kl_t=k))(_f32(KL)))
    np.testing.assert_array_equal(gk, 0.0)  # kl_cost = 0: the KL is a diagnostic only
    cfg = dataclasses.replace(CFG, kl_cost=2.0)
    gk = np.asarray(jax.grad(lambda k: _run(cfg, kl_t=k)[0])(_f32(KL)))
    np.testing.assert_allclose(gk, 2.0 * VALID / 4, atol=1e-7)

    for name in ("loss/policy", "loss/value", "policy/entropy", "policy/approx_kl"):
        gd = jax.grad(lambda logp, v: _run(logp_t=logp, v_tm1=v)[1][name], argnums=(0, 1))(
            _f32(LOGP), _f32(V))
        np.testing.assert_array_equal(np.concatenate(gd), 0.0, err_msg=name)


def test_policy_loss_matches_rlax_when_all_valid():
    valid = np.ones(5, bool)
    _, m = _run(valid_t=valid)
    expected = rlax.clipped_surrogate_pg_loss(_f32(RATIO), _f32(ADV), 0.2)
    np.testing.assert_allclose(m["loss/policy"], expected, rtol=1e-6)


def _boundary():
    """Step 1 terminates, step 2 is its reset step, step 4 is truncated, step 5 resets."""
    values = np.array([0.5, 1.0, 7.0, 0.2, 0.4, 3.0, -1.0, 2.0], np.float32)  # V(x_0..x_7)
    r = np.array([1.0, 2.0, 0.0, -1.0, 0.5, 0.0, 1.5], np.float32)
    term = np.array([0, 1, 0, 0, 0, 0, 0], bool)
    trunc = np.array([0, 0, 0, 0, 1, 0, 0], bool)
    return values, r, term, trunc


def test_gae_targets_bootstrap_on_truncation_only():
    values, r, term, trunc = _boundary()
    cfg = PPOConfig(discount=0.9, gae_lambda=1.0, reward_clip=0.0)
    adv, target = gae_targets(_f32(r), _f32(values), jnp.asarray(term), jnp.asarray(trunc), cfg)
    g = 0.9
    # lambda = 1: targets are returns. Termination: no bootstrap. Truncation: V(final obs).
    expected = {0: 1.0 + g * 2.0, 1: 2.0, 3: -1.0 + g * 0.5 + g * g * 3.0, 4: 0.5 + g * 3.0,
                6: 1.5 + g * 2.0}
    for t, ret in expected.items():
        np.testing.assert_allclose(target[t], ret, rtol=1e-5)
        np.testing.assert_allclose(adv[t], ret - values[t], rtol=1e-5, atol=1e-6)


def test_gae_targets_clip_rewards():
    values, r, term, trunc = _boundary()
    cfg = PPOConfig(discount=0.9, gae_lambda=0.0, reward_clip=1.0)
    adv, _ = gae_targets(_f32(r), _f32(values), jnp.asarray(term), jnp.asarray(trunc), cfg)
    np.testing.assert_allclose(adv[1], 1.0 - values[1], rtol=1e-6)  # r=2 clipped to 1


def test_vtrace_targets_weighted_advantage_is_vtrace_pg_advantage():
    values, r, term, trunc = _boundary()
    rho = np.array([0.5, 1.7, 1.0, 0.8, 2.5, 0.9, 1.2], np.float32)
    cfg = PPOConfig(discount=0.9, gae_lambda=0.95, reward_clip=0.0)
    adv, vs, w = vtrace_targets(_f32(r), _f32(values), jnp.asarray(term), jnp.asarray(trunc),
                                _f32(rho), cfg)
    r_f, d = returns.fold_truncation(_f32(r), _f32(values[1:]), jnp.asarray(term),
                                     jnp.asarray(trunc), 0.9)
    ref_vs, ref_pg = returns.vtrace(_f32(values[:-1]), _f32(values[1:]), r_f, d, _f32(rho), 0.95)
    np.testing.assert_allclose(vs, ref_vs, rtol=1e-6)
    np.testing.assert_allclose(w * adv, ref_pg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, np.minimum(1.0, rho))


def test_vtrace_targets_on_policy_equal_gae_returns():
    """rho = 1: V-trace targets are the lambda-returns, i.e. GAE + V."""
    values, r, term, trunc = _boundary()
    cfg = PPOConfig(discount=0.9, gae_lambda=0.8, reward_clip=0.0)
    args = (_f32(r), _f32(values), jnp.asarray(term), jnp.asarray(trunc))
    _, vs, w = vtrace_targets(*args, jnp.ones(7), cfg)
    _, gae_target = gae_targets(*args, cfg)
    np.testing.assert_allclose(vs, gae_target, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, 1.0)


@pytest.mark.parametrize("field,value", [
    ("correction", "retrace"), ("loop", "while"), ("gae_lambda", 1.5), ("num_epochs", 0),
    ("num_minibatches", 2.5), ("clip_eps", 0.0), ("target_kl", -1.0), ("value_clip_eps", -0.1)])
def test_config_rejects_bad_values(field, value):
    with pytest.raises(ValueError, match=field):
        PPOConfig(**{field: value})


def test_config_resolves_auto_correction():
    assert PPOConfig().resolve(synchronous=True).correction == "none"
    assert PPOConfig().resolve(synchronous=False).correction == "vtrace"
    assert PPOConfig(correction="none").resolve(synchronous=False).correction == "none"
