"""Action distributions and policy heads against independent NumPy/SciPy references.

Log-probs and entropies of every head: categorical, multi-categorical, clipped Gaussian
(censored: tail masses on the bounds), tanh-squashed Gaussian (change-of-variables correction,
entropy by quadrature), and the mixed head (sum of its parts).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces
from scipy import integrate, special, stats

import networks
from networks.distributions import (Categorical, DiagGaussian, Joint, MultiCategorical,
                                    from_space)

RNG = np.random.default_rng(0)


def _gauss_params(b, d, scale=1.0):
    return {"mean": jnp.asarray(RNG.normal(size=(b, d)) * scale, jnp.float32),
            "log_std": jnp.asarray(RNG.normal(size=(b, d)) * 0.5, jnp.float32)}


def test_categorical_matches_numpy():
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    action = RNG.integers(0, 4, 5)
    d = Categorical(4)
    logp_ref = special.log_softmax(logits, -1)
    np.testing.assert_allclose(d.log_prob(logits, action), logp_ref[np.arange(5), action],
                               rtol=1e-5)
    p = np.exp(logp_ref)
    np.testing.assert_allclose(d.entropy(logits), -(p * logp_ref).sum(-1), rtol=1e-5)
    q_logits = RNG.normal(size=(5, 4)).astype(np.float32)
    kl_ref = (p * (logp_ref - special.log_softmax(q_logits, -1))).sum(-1)
    np.testing.assert_allclose(d.kl(logits, q_logits), kl_ref, rtol=1e-4, atol=1e-6)


def test_multi_categorical_is_a_product_of_categoricals():
    nvec = (2, 3, 4)
    logits = RNG.normal(size=(6, sum(nvec))).astype(np.float32)
    action = np.stack([RNG.integers(0, n, 6) for n in nvec], -1)
    d = MultiCategorical(nvec)
    parts = np.split(logits, np.cumsum(nvec)[:-1], axis=-1)
    logps = [special.log_softmax(x, -1) for x in parts]
    ref = sum(lp[np.arange(6), action[:, i]] for i, lp in enumerate(logps))
    np.testing.assert_allclose(d.log_prob(logits, action), ref, rtol=1e-5)
    ent = sum(-(np.exp(lp) * lp).sum(-1) for lp in logps)
    np.testing.assert_allclose(d.entropy(logits), ent, rtol=1e-5)
    a = d.sample(logits, jax.random.key(0))
    assert a.shape == (6, 3) and a.dtype == jnp.int32
    assert np.all((np.asarray(a) >= 0) & (np.asarray(a) < np.array(nvec)))


def test_clipped_gaussian_log_prob_is_censored_normal():
    low, high = (-1.0, -2.0, -np.inf), (1.0, 0.5, np.inf)
    d = DiagGaussian(low, high, bounds="clip")
    params = _gauss_params(4, 3)
    m, s = np.asarray(params["mean"]), np.exp(np.asarray(params["log_std"]))
    # Rows: inside; on the low bounds; on the high bounds; mixed (third dim unbounded).
    a = np.array([[0.3, -0.4, 5.0], [-1.0, -2.0, -7.0], [1.0, 0.5, 2.0], [1.0, -0.1, -1e3]],
                 np.float32)
    ref = np.zeros(4)
    for i in range(4):
        for j in range(3):
            if a[i, j] <= low[j]:
                ref[i] += stats.norm.logcdf((low[j] - m[i, j]) / s[i, j])
            elif a[i, j] >= high[j]:
                ref[i] += stats.norm.logsf((high[j] - m[i, j]) / s[i, j])
            else:
                ref[i] += stats.norm.logpdf(a[i, j], m[i, j], s[i, j])
    np.testing.assert_allclose(d.log_prob(params, a), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d.entropy(params), stats.norm.entropy(scale=s).sum(-1),
                               rtol=1e-5)
    # Gradients are finite on the bounds and with infinite bounds (no NaN from jnp.where).
    g = jax.grad(lambda p: d.log_prob(p, a).sum())(params)
    assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(g))


def test_clipped_gaussian_samples_put_the_tail_mass_on_the_bounds():
    d = DiagGaussian((-1.0,), (1.0,), bounds="clip")
    params = {"mean": jnp.full((20_000, 1), 0.8), "log_std": jnp.full((20_000, 1), np.log(0.5))}
    a = np.asarray(d.sample(params, jax.random.key(1)))
    assert a.min() >= -1.0 and a.max() <= 1.0
    np.testing.assert_allclose((a == 1.0).mean(), stats.norm.sf(0.4), atol=0.01)
    first = {k: v[:1] for k, v in params.items()}
    np.testing.assert_allclose(np.exp(d.log_prob(first, np.ones((1, 1), np.float32))),
                               stats.norm.sf(0.4), rtol=1e-5)


def _tanh_reference(a, m, s, low, high):
    mid, half = (high + low) / 2, (high - low) / 2
    edge = float(np.float32(1 - 1e-6))  # the float32 value the distribution clips to
    u = np.arctanh(np.clip((a - mid) / half, -edge, edge))
    return (stats.norm.logpdf(u, m, s) - np.log(half) - np.log(1 - np.tanh(u) ** 2)).sum(-1)


def test_tanh_gaussian_log_prob_has_the_squash_correction():
    low, high = np.array([-2.0, 0.0]), np.array([2.0, 3.0])
    d = DiagGaussian(tuple(low), tuple(high), bounds="tanh")
    params = _gauss_params(5, 2)
    m, s = np.asarray(params["mean"], np.float64), np.exp(np.asarray(params["log_std"],
                                                                     np.float64))
    a = np.asarray(d.sample(params, jax.random.key(2)), np.float64)
    assert np.all((a >= low) & (a <= high))
    np.testing.assert_allclose(d.log_prob(params, a.astype(np.float32)),
                               _tanh_reference(a, m, s, low, high), rtol=2e-4, atol=2e-3)
    # Actions exactly on the bounds (tanh saturates in float32) get a finite log-prob: that
    # of the point 1e-6 inside.
    edge = np.array([[2.0, 0.0]] * 5, np.float32)
    lp = np.asarray(d.log_prob(params, edge))
    assert np.all(np.isfinite(lp))
    # float32 atanh near 1 is coarse (d atanh / dy ~ 1e6): a looser tolerance there.
    np.testing.assert_allclose(lp, _tanh_reference(edge.astype(np.float64), m, s, low, high),
                               rtol=2e-3)


@pytest.mark.parametrize("mean,log_std", [(0.0, 0.0), (1.5, -1.0), (-0.7, 1.5), (3.0, 2.0),
                                          (0.2, -4.0)])
def test_tanh_gaussian_entropy_matches_quadrature(mean, log_std):
    low, high = -1.5, 2.5
    half = (high - low) / 2
    d = DiagGaussian((low,), (high,), bounds="tanh")
    s = np.exp(log_std)
    # H[a] = H[u] + E[log |da/du|] by adaptive quadrature over u.
    # log(1 - tanh(u)^2) = -2 log cosh(u), written to stay finite for large |u|.
    log_sech2 = lambda u: -2.0 * (np.abs(u) + np.log1p(np.exp(-2 * np.abs(u))) - np.log(2))
    f = lambda u: stats.norm.pdf(u, mean, s) * (np.log(half) + log_sech2(u))
    expect, _ = integrate.quad(f, mean - 12 * s, mean + 12 * s, limit=400)
    ref = stats.norm.entropy(scale=s) + expect
    params = {"mean": jnp.full((1, 1), mean), "log_std": jnp.full((1, 1), log_std)}
    # Gauss-Hermite resolves -2 log cosh(u) less well when std >> 1 (its curvature scale).
    np.testing.assert_allclose(d.entropy(params)[0], ref, atol=1e-4 if log_std <= 1 else 5e-3)


def test_tanh_entropy_is_the_mean_negative_log_prob_of_samples():
    d = DiagGaussian((-1.0, -1.0), (1.0, 1.0), bounds="tanh")
    params = {"mean": jnp.tile(jnp.array([[0.3, -1.0]]), (200_000, 1)),
              "log_std": jnp.tile(jnp.array([[-0.5, 0.4]]), (200_000, 1))}
    a = d.sample(params, jax.random.key(3))
    mc = -float(jnp.mean(d.log_prob(params, a)))
    np.testing.assert_allclose(mc, float(d.entropy(params)[0]), atol=0.01)


def test_gaussian_kl_is_closed_form():
    d = DiagGaussian((-1.0,) * 3, (1.0,) * 3, bounds="tanh")
    p, q = _gauss_params(4, 3), _gauss_params(4, 3)
    mp, sp = np.asarray(p["mean"]), np.exp(np.asarray(p["log_std"]))
    mq, sq = np.asarray(q["mean"]), np.exp(np.asarray(q["log_std"]))
    ref = (np.log(sq / sp) + (sp ** 2 + (mp - mq) ** 2) / (2 * sq ** 2) - 0.5).sum(-1)
    np.testing.assert_allclose(d.kl(p, q), ref, rtol=1e-4, atol=1e-6)


def test_mixed_head_log_prob_and_entropy_are_sums_of_parts():
    space = spaces.Dict({"steer": spaces.Box(-1, 1, (2,)), "gear": spaces.Discrete(3),
                         "lights": spaces.MultiDiscrete([2, 2])})
    d = from_space(space, bounds="tanh")
    assert isinstance(d, Joint)
    parts = dict(zip(d.keys, d.parts))
    params = {"steer": _gauss_params(4, 2),
              "gear": jnp.asarray(RNG.normal(size=(4, 3)), jnp.float32),
              "lights": jnp.asarray(RNG.normal(size=(4, 4)), jnp.float32)}
    action = d.sample(params, jax.random.key(4))
    assert set(action) == {"steer", "gear", "lights"}
    assert action["steer"].shape == (4, 2) and action["gear"].shape == (4,)
    total = sum(parts[k].log_prob(params[k], action[k]) for k in parts)
    np.testing.assert_allclose(d.log_prob(params, action), total, rtol=1e-6)
    np.testing.assert_allclose(d.entropy(params),
                               sum(parts[k].entropy(params[k]) for k in parts), rtol=1e-6)
    tup = from_space(spaces.Tuple((spaces.Discrete(2), spaces.Box(-1, 1, (1,)))))
    a = tup.sample((jnp.zeros((3, 2)), _gauss_params(3, 1)), jax.random.key(5))
    assert isinstance(a, tuple) and a[0].shape == (3,) and a[1].shape == (3, 1)


@pytest.mark.parametrize("space,match", [
    (spaces.MultiBinary(3), "unsupported action space"),
    (spaces.Box(-1, 1, (2, 2)), "1-D"),
    (spaces.Box(0, 5, (2,), dtype=np.int64), "1-D floats"),
    (spaces.Discrete(3, start=1), "starts at 1"),
    (spaces.Dict({"ok": spaces.Discrete(2), "bad": spaces.Text(4)}), "Text"),
])
def test_unsupported_spaces_are_named(space, match):
    with pytest.raises(ValueError, match=match):
        from_space(space)


def test_tanh_needs_finite_bounds():
    with pytest.raises(ValueError, match="finite bounds"):
        from_space(spaces.Box(-np.inf, np.inf, (2,)), bounds="tanh")
    with pytest.raises(ValueError, match="bounds='squash'"):
        from_space(spaces.Box(-1, 1, (2,)), bounds="squash")


@pytest.mark.parametrize("state_dependent", [False, True])
def test_gaussian_head_shapes_and_initial_std(state_dependent):
    dist = from_space(spaces.Box(-1, 1, (3,)), state_dependent_std=state_dependent,
                      init_log_std=-0.5)
    net = networks.ActorCritic(torso=networks.MLP((8,)), action_dist=dist)
    obs = np.ones((5, 4), np.float32)
    variables = net.init(jax.random.key(0), obs)
    pi, value = net.apply(variables, obs)
    assert pi["mean"].shape == pi["log_std"].shape == (5, 3) and value.shape == (5,)
    # orthogonal(0.01) kernel: the initial log-std is (close to) init_log_std either way.
    np.testing.assert_allclose(pi["log_std"], -0.5, atol=0.05)
    assert ("log_std" in variables["params"]["policy"]) != state_dependent


def test_discrete_actor_critic_still_outputs_logits():
    net = networks.ActorCritic(torso=networks.MLP((8,)), num_actions=4)
    obs = np.ones((2, 3), np.float32)
    logits, _ = net.apply(net.init(jax.random.key(0), obs), obs)
    assert logits.shape == (2, 4) and net.dist == Categorical(4)
