"""Legal-action masks (networks/distributions.py `mask_logits`, networks/actor_critic.py
`action_mask_key`, networks/config.py `resolve_mask_key`).

The masked distribution against an independent NumPy reference written from its definition:
pi(a) = exp(l_a) / sum over the legal b of exp(l_b) for a legal a, 0 for an illegal one; its
entropy -sum_legal pi log pi; a multi-categorical's parts masked each by its own slice. Then
the properties the agents rely on: gradients reach no masked logit, sampling and greedy play
never pick an illegal action, the torso does not see the mask unless asked, and the mask key
is found (jumanji's `action_mask`) or refused naming what is wrong.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

import networks
from networks.config import NetworkConfig, build_network, resolve_mask_key
from networks.distributions import (MASKED_LOGIT, Categorical, DiagGaussian,
                                    MultiCategorical, mask_logits)

RNG = np.random.default_rng(0)


def _masks(rows: int, n: int) -> np.ndarray:
    """Random 0/1 float masks [rows, n] with at least one legal action per row."""
    mask = (RNG.random((rows, n)) < 0.5).astype(np.float32)
    mask[np.arange(rows), RNG.integers(0, n, rows)] = 1.0
    return mask


def _reference(logits: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log pi [rows, n] with -inf on illegal actions, entropy [rows]) from the definition,
    in float64."""
    logits = logits.astype(np.float64)
    legal = mask > 0
    shifted = np.where(legal, logits - logits.max(-1, keepdims=True), -np.inf)
    log_z = np.log(np.sum(np.exp(shifted), -1, keepdims=True))
    logp = shifted - log_z
    p = np.exp(logp)
    entropy = -np.sum(np.where(legal, p * np.where(legal, logp, 0.0), 0.0), -1)
    return logp, entropy


def test_masked_categorical_log_prob_and_entropy_match_the_definition():
    rows, n = 64, 6
    logits = (RNG.normal(size=(rows, n)) * 3).astype(np.float32)
    mask = _masks(rows, n)
    d = Categorical(n)
    masked = mask_logits(d, jnp.asarray(logits), jnp.asarray(mask))
    logp_ref, entropy_ref = _reference(logits, mask)
    actions = np.array([RNG.choice(np.flatnonzero(m)) for m in mask])
    np.testing.assert_allclose(d.log_prob(masked, actions), logp_ref[np.arange(rows), actions],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.entropy(masked), entropy_ref, rtol=1e-5, atol=1e-6)
    # KL between two policies masked alike: over the legal actions only, finite.
    q = mask_logits(d, jnp.asarray(RNG.normal(size=(rows, n)), jnp.float32), jnp.asarray(mask))
    logq_ref, _ = _reference(np.asarray(q), mask)
    legal = mask > 0
    kl_ref = np.sum(np.where(legal, np.exp(logp_ref) * (np.where(legal, logp_ref, 0)
                                                        - np.where(legal, logq_ref, 0)), 0), -1)
    np.testing.assert_allclose(d.kl(masked, q), kl_ref, rtol=1e-4, atol=1e-6)
    # An action with one legal choice has log-prob 0 and entropy 0.
    one = np.zeros((1, n), np.float32)
    one[0, 2] = 1
    only = mask_logits(d, jnp.asarray(logits[:1]), jnp.asarray(one))
    assert float(d.log_prob(only, np.array([2]))[0]) == pytest.approx(0.0, abs=1e-6)
    assert float(d.entropy(only)[0]) == pytest.approx(0.0, abs=1e-6)


def test_masked_multi_categorical_masks_each_part_with_its_slice():
    nvec, rows = (3, 4), 32
    d = MultiCategorical(nvec)
    logits = RNG.normal(size=(rows, sum(nvec))).astype(np.float32)
    mask = np.concatenate([_masks(rows, n) for n in nvec], -1)
    masked = mask_logits(d, jnp.asarray(logits), jnp.asarray(mask))
    parts = [_reference(logits[:, a:b], mask[:, a:b]) for a, b in ((0, 3), (3, 7))]
    actions = np.stack([[RNG.choice(np.flatnonzero(m)) for m in mask[:, a:b]]
                        for a, b in ((0, 3), (3, 7))], -1)
    ref = sum(lp[np.arange(rows), actions[:, i]] for i, (lp, _) in enumerate(parts))
    np.testing.assert_allclose(d.log_prob(masked, actions), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.entropy(masked), parts[0][1] + parts[1][1], rtol=1e-5,
                               atol=1e-6)


def test_no_gradient_reaches_a_masked_logit():
    rows, n = 16, 5
    d = Categorical(n)
    logits = jnp.asarray(RNG.normal(size=(rows, n)), jnp.float32)
    mask = jnp.asarray(_masks(rows, n))
    actions = jnp.asarray([RNG.choice(np.flatnonzero(m)) for m in np.asarray(mask)])
    other = jnp.asarray(RNG.normal(size=(rows, n)), jnp.float32)

    def loss(x):
        masked = mask_logits(d, x, mask)
        return jnp.sum(d.log_prob(masked, actions) + 0.1 * d.entropy(masked)
                       + d.kl(masked, mask_logits(d, other, mask)))
    grad = np.asarray(jax.grad(loss)(logits))
    assert np.all(np.isfinite(grad))
    assert np.all(grad[np.asarray(mask) == 0] == 0.0)
    assert np.all(np.abs(grad[np.asarray(mask) > 0]).sum() > 0)


def test_illegal_actions_are_never_sampled_nor_played_greedily():
    n, rows = 4, 256
    d = Categorical(n)
    mask = _masks(rows, n)
    # The illegal actions get the largest raw logits: a mask that leaked would show.
    logits = np.where(mask > 0, 0.0, 5.0).astype(np.float32)
    masked = mask_logits(d, jnp.asarray(logits), jnp.asarray(mask))
    draws = jax.vmap(lambda k: d.sample(masked, k))(jax.random.split(jax.random.key(0), 200))
    draws = np.asarray(draws)  # [200, rows]
    assert np.all(mask[np.arange(rows), draws] > 0)
    # ...and every legal action is drawn somewhere (the mask removes, it does not pick).
    assert all(set(np.flatnonzero(m)) == set(draws[:, r]) for r, m in enumerate(mask))
    greedy = np.asarray(d.mode(masked))
    assert np.all(mask[np.arange(rows), greedy] > 0)


def _net(lstm: bool = False, torso_sees_mask: bool = False, key: str = "action_mask"):
    dist = Categorical(3)
    torso = networks.MLP(hidden_sizes=(8,))
    common = dict(torso=torso, action_dist=dist, action_mask_key=key,
                  torso_sees_mask=torso_sees_mask)
    if lstm:
        return networks.RecurrentActorCritic(lstm_size=4, **common)
    return networks.ActorCritic(**common)


def test_the_network_masks_its_policy_and_the_torso_sees_no_mask_unless_asked():
    obs = {"board": jnp.asarray(RNG.normal(size=(5, 7)), jnp.float32),
           "action_mask": jnp.asarray([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 0, 0]],
                                      jnp.float32)}
    net = _net()
    params = net.init(jax.random.key(0), obs)
    logits, value = net.apply(params, obs)
    assert np.all(np.asarray(logits)[np.asarray(obs["action_mask"]) == 0] == MASKED_LOGIT)
    # The torso's first layer takes the 7 board features, not 7 + 3.
    assert params["params"]["torso"]["Dense_0"]["kernel"].shape[0] == 7
    # The mask changes the policy only: the same value, the same legal logits.
    flipped = {**obs, "action_mask": jnp.ones((5, 3))}
    logits_all, value_all = net.apply(params, flipped)
    np.testing.assert_array_equal(value, value_all)
    legal = np.asarray(obs["action_mask"]) > 0
    np.testing.assert_array_equal(np.asarray(logits)[legal], np.asarray(logits_all)[legal])
    seen = _net(torso_sees_mask=True)
    assert seen.init(jax.random.key(0), obs)["params"]["torso"]["Dense_0"]["kernel"].shape[0] \
        == 10
    # The recurrent network masks its [T, B] policy the same way.
    rnn = _net(lstm=True)
    seq = jax.tree.map(lambda x: jnp.stack([x, x]), obs)
    reset = jnp.zeros((2, 5), bool)
    p = rnn.init(jax.random.key(0), seq, rnn.initial_state(5), reset)
    (logits, _), _ = rnn.apply(p, seq, rnn.initial_state(5), reset)
    assert np.all(np.asarray(logits)[:, ~legal] == MASKED_LOGIT)
    with pytest.raises(ValueError, match=r"action_mask_key='legal' names no entry of the "
                                         r"observation \(entries: \['action_mask', 'board'\]\)"):
        _net(key="legal").init(jax.random.key(0), obs)


def test_the_mask_key_is_found_for_jumanji_and_refused_naming_what_is_wrong():
    box = spaces.Box(0, 1, (4,), np.float32)
    obs = spaces.Dict({"grid": spaces.Box(0, 1, (6, 6), np.float32), "action_mask": box})
    assert resolve_mask_key("auto", obs, Categorical(4)) == "action_mask"
    pgx = spaces.Dict({"board": box, "legal_action_mask": box})
    assert resolve_mask_key("auto", pgx, Categorical(4)) == "legal_action_mask"
    assert resolve_mask_key("", obs, Categorical(4)) == ""
    # auto: a mask that does not fit the head is left to the torso; one array has none.
    assert resolve_mask_key("auto", obs, Categorical(5)) == ""
    assert resolve_mask_key("auto", obs, DiagGaussian((-1.0,), (1.0,))) == ""
    assert resolve_mask_key("auto", box, Categorical(4)) == ""
    assert resolve_mask_key("action_mask", obs, MultiCategorical((2, 2))) == "action_mask"
    with pytest.raises(ValueError, match=r"action_mask_key='mask' is no entry of the "
                                         r"observation \(entries: \['action_mask', 'grid'\]\)"):
        resolve_mask_key("mask", obs, Categorical(4))
    with pytest.raises(ValueError, match=r"action_mask_key='action_mask': the mask has shape "
                                         r"\(4,\); the action head .* takes \(5,\)"):
        resolve_mask_key("action_mask", obs, Categorical(5))
    with pytest.raises(ValueError, match=r"action_mask_key='action_mask': an action mask "
                                         r"applies to Discrete and MultiDiscrete"):
        resolve_mask_key("action_mask", obs, DiagGaussian((-1.0,), (1.0,)))
    net = build_network(NetworkConfig(), spaces.Discrete(4), obs, "auto")
    assert (net.action_mask_key, net.torso_sees_mask) == ("action_mask", False)
    assert build_network(NetworkConfig(), spaces.Discrete(4), obs, "").action_mask_key == ""


def test_observation_normalisation_leaves_the_mask_as_it_is():
    from agents import normalization
    net = _net()
    obs = {"board": jnp.asarray(RNG.normal(size=(4, 7)) * 5 + 3, jnp.float32),
           "action_mask": jnp.asarray(_masks(4, 3))}
    norm = normalization.init_state(obs, True, False, 4, raw=normalization.raw_keys(net))
    assert isinstance(norm.obs["action_mask"], normalization.Raw)
    rollout_obs = jax.tree.map(lambda x: jnp.stack([x, x, x]), obs)  # [T+1, B, ...]
    stats = normalization.update_obs_stats(norm.obs, rollout_obs, axis_name=None)
    seen = normalization.normalize_obs(stats, obs, clip=10.0)
    np.testing.assert_array_equal(seen["action_mask"], obs["action_mask"])
    assert abs(float(jnp.mean(seen["board"]))) < 1.0  # the board is normalised


def test_a_mask_that_allows_nothing_masks_nothing_and_is_found():
    from networks.distributions import allows_nothing
    d = Categorical(3)
    logits = jnp.asarray(RNG.normal(size=(2, 3)), jnp.float32)
    mask = jnp.asarray([[0, 0, 0], [0, 1, 0]], jnp.float32)
    masked = mask_logits(d, logits, mask)
    np.testing.assert_array_equal(masked[0], logits[0])  # the unmasked policy
    assert np.asarray(masked[1])[[0, 2]].tolist() == [MASKED_LOGIT] * 2
    assert np.asarray(allows_nothing(d, mask)).tolist() == [True, False]
    multi = MultiCategorical((2, 2))
    parts = jnp.asarray([[1, 0, 0, 0], [1, 1, 0, 1]], jnp.float32)
    assert np.asarray(allows_nothing(multi, parts)).tolist() == [True, False]
    out = np.asarray(mask_logits(multi, jnp.zeros((2, 4)), parts))
    assert out[0].tolist() == [0.0, MASKED_LOGIT, 0.0, 0.0]  # its empty part: unmasked
