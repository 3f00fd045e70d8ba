"""PPO's learner step over N faked learner devices equals one device on the whole batch.

Built exactly as the runtime builds it (sebulba/learner.make_learn_fn over a Topology), with
shuffling off: each device then splits its env columns as i mod M, so the N devices together
form the same global minibatches as one device on all columns. This pins the gradient-averaging
trap (an N-times update) and the cross-device statistics (advantage moments, value-normaliser
moments, the KL early stop), for a categorical, a tanh-Gaussian and a mixed (Dict) action head,
with observation normalisation and reward scaling (statistics psum-ed over devices).
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import agents.ppo as ppo
from podracer.agent import Rollout
from sebulba.learner import make_learn_fn, place_learner_state
from sebulba.topology import make_topology
from tests.helpers import episode_ends, head_network

T, B, OBS = 6, 8, 4


def _rollout(seed=0, head="discrete") -> Rollout:
    rng = np.random.default_rng(seed)
    net = head_network(head)
    # Observations far from zero-mean / unit-std, so that normalisation matters.
    obs = (3.0 + 5.0 * rng.normal(size=(T + 1, B, OBS))).astype(np.float32)
    # Behaviour policy/values from other parameters, so importance weights differ from 1.
    behaviour = net.init(jax.random.key(123), obs[0])
    policy, value = jax.vmap(lambda o: net.apply(behaviour, o))(obs[:-1])
    policy = jax.tree.map(lambda x: x * 50.0, policy)  # clearly different behaviour
    keys = jax.random.split(jax.random.key(seed), T)
    action = jax.vmap(net.dist.sample)(policy, keys)
    logp = jax.vmap(net.dist.log_prob)(policy, action)
    terminated, truncated, valid = episode_ends(rng, T, B, 0.1)
    return Rollout(obs=jnp.asarray(obs), action=action,
                   reward=jnp.asarray(rng.normal(size=(T, B)).astype(np.float32)),
                   terminated=jnp.asarray(terminated), truncated=jnp.asarray(truncated),
                   valid=jnp.asarray(valid),
                   extras={"logp": logp, "policy": policy, "value": value})


def _learn_once(cfg: ppo.PPOConfig, learner_ids, rollout: Rollout, head="discrete",
                updates=1):
    agent = ppo.make_agent(head_network(head), cfg, num_updates=10, batch_envs=B)
    topo = make_topology((0,), learner_ids, B)
    state = place_learner_state(agent.init(jax.random.key(0), rollout.obs[0]), topo)
    learn = make_learn_fn(agent, topo)
    sharded = jax.device_put(rollout, topo.batch_sharded())
    for _ in range(updates):  # reward scaling and obs statistics carry over between updates
        state, metrics = learn(state, (sharded,))
    return jax.device_get(state), jax.device_get(metrics)


BASE = ppo.PPOConfig(shuffle=False, num_epochs=2, num_minibatches=2, learning_rate=1e-2,
                     lr_decay=False, correction="none")
CASES = {
    "gae_scan": BASE,
    "vtrace_unroll": dataclasses.replace(BASE, correction="vtrace", loop="unroll"),
    "vtrace_valuenorm_kl": dataclasses.replace(BASE, correction="vtrace", value_norm=True,
                                               kl_cost=0.5, max_grad_norm=0.0),
    "gae_obsnorm_rewscale": dataclasses.replace(BASE, obs_norm=True, reward_scaling=True,
                                                kl_cost=0.5),
    "vtrace_obsnorm_rewscale": dataclasses.replace(BASE, correction="vtrace", obs_norm=True,
                                                   reward_scaling=True, reward_clip=0.0),
}


@pytest.mark.parametrize("case,learners,head", [
    ("gae_scan", (0, 1), "discrete"), ("gae_scan", (0, 1, 2, 3), "discrete"),
    ("vtrace_unroll", (0, 1), "discrete"), ("vtrace_valuenorm_kl", (0, 1, 2, 3), "discrete"),
    ("gae_obsnorm_rewscale", (0, 1, 2, 3), "tanh"),
    ("vtrace_obsnorm_rewscale", (0, 1), "mixed")])
def test_sharded_learner_equals_single_device(case, learners, head):
    cfg, rollout = CASES[case], _rollout(head=head)
    updates = 2 if cfg.obs_norm else 1
    single, m1 = _learn_once(cfg, (0,), rollout, head, updates)
    multi, mn = _learn_once(cfg, learners, rollout, head, updates)
    before = head_network(head).init(jax.random.split(jax.random.key(0))[0], rollout.obs[0])
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: np.abs(a - b).max(), single.params,
                                         before))
    assert max(moved) > 1e-3, "the update must actually move the parameters"
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                 single.params, multi.params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                 single.value_norm, multi.value_norm)
    # Normaliser statistics (and every env column's return accumulator) agree as well.
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 single.norm, multi.norm)
    if cfg.obs_norm:
        obs = np.asarray(rollout.obs[:-1]).reshape(-1, OBS)
        np.testing.assert_allclose(single.norm.obs.mean, obs.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(single.norm.obs.var, obs.var(0), rtol=1e-4)
        assert "norm/return_std" in m1
    # Adam is invariant to a constant gradient scale, so the parameters alone would not catch
    # an N-times gradient; the logged norm of the averaged gradient does.
    for k in ("optim/grad_norm", "loss/total", "policy/approx_kl", "adv/mean", "adv/std"):
        np.testing.assert_allclose(m1[k], mn[k], rtol=1e-4, atol=1e-6)


def test_scan_and_unrolled_loops_agree():
    rollout = _rollout(1)
    a, _ = _learn_once(dataclasses.replace(BASE, loop="scan"), (0,), rollout)
    b, _ = _learn_once(dataclasses.replace(BASE, loop="unroll"), (0,), rollout)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7),
                 a.params, b.params)


@pytest.mark.parametrize("loop", ["scan", "unroll"])
def test_kl_early_stop_is_identical_across_devices(loop):
    """A tiny target_kl stops after the first epoch; the sharded run stops at the same point
    (the KL is pmean-ed) and so lands on the same parameters."""
    cfg = dataclasses.replace(BASE, correction="vtrace", target_kl=1e-9, num_epochs=2,
                              loop=loop)
    rollout = _rollout(2)
    single, m1 = _learn_once(cfg, (0,), rollout)
    multi, mn = _learn_once(cfg, (0, 1), rollout)
    assert m1["ppo/epochs_run"] == 1.0 and mn["ppo/epochs_run"] == 1.0
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                 single.params, multi.params)
    one_epoch, _ = _learn_once(dataclasses.replace(cfg, target_kl=0.0, num_epochs=1),
                               (0,), rollout)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
                 single.params, one_epoch.params)


@pytest.mark.parametrize("head", ["discrete", "tanh", "mixed"])
def test_sample_minibatches_equal_env_columns_on_one_full_minibatch(head):
    """minibatch_axis="sample" runs the loss on the flat steps (no env axis), "env" on env
    columns with a mean of per-column means: with every step valid and one minibatch, both
    are the mean over all steps, so the two paths must land on the same parameters and
    metrics (each SGD step sees the whole batch, in a different order of the same steps)."""
    rollout = _rollout(3, head)._replace(valid=jnp.ones((T, B), bool))
    cfg = dataclasses.replace(BASE, num_minibatches=1, num_epochs=2, kl_cost=0.5)
    env, m_env = _learn_once(cfg, (0,), rollout, head)
    flat, m_flat = _learn_once(dataclasses.replace(cfg, minibatch_axis="sample"), (0,),
                               rollout, head)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                 env.params, flat.params)
    for k in ("optim/grad_norm", "loss/total", "loss/value", "policy/entropy", "policy/kl",
              "policy/clip_frac"):
        np.testing.assert_allclose(m_env[k], m_flat[k], rtol=1e-4, atol=1e-6)


def test_minibatches_must_split_the_local_envs():
    cfg = dataclasses.replace(BASE, num_minibatches=3)
    # The rule and message of the config check (agents/ppo/checks.py), at trace time.
    with pytest.raises(ValueError, match=rf"agent\.num_minibatches=3 must divide the {B} "
                                         rf"environments each learner device holds"):
        _learn_once(cfg, (0,), _rollout())


def _reference_loss_terms(cfg: ppo.PPOConfig, rollout: Rollout, head: str, idx: np.ndarray):
    """The PPO loss of one SGD step at the initial parameters on the flat steps `idx` (indices
    into the [T * B] steps, t-major), from the equations: GAE from the NumPy references
    (tests/agents/returns_reference.py, bootstrapping from V(final obs) on truncation),
    advantages normalised over the minibatch's valid steps, Schulman et al.'s clipped
    surrogate (eq. 7), the clipped value loss and the entropy bonus (eq. 9), each a mean over
    the valid steps. Float64 NumPy, none of the learner's code."""
    from tests.agents.returns_reference import ref_fold_truncation, ref_gae
    net = head_network(head)
    params = ppo.make_agent(net, cfg, num_updates=10, batch_envs=B).init(
        jax.random.key(0), rollout.obs[0]).params
    # [T + 1, B]: the bootstrap value V(obs_T) too (the network takes a batch of observations).
    pi, v = net.apply(params, np.asarray(rollout.obs).reshape((T + 1) * B, OBS))
    pi = jax.tree.map(lambda x: x.reshape((T + 1, B) + x.shape[1:]), pi)
    v = np.asarray(v, np.float64).reshape(T + 1, B)
    logp = np.asarray(net.dist.log_prob(jax.tree.map(lambda x: x[:-1], pi), rollout.action),
                      np.float64)
    entropy = np.asarray(net.dist.entropy(jax.tree.map(lambda x: x[:-1], pi)), np.float64)
    old_logp = np.asarray(rollout.extras["logp"], np.float64)
    old_v = np.asarray(np.concatenate([rollout.extras["value"], v[-1:]]), np.float64)
    reward, term, trunc = (np.asarray(x) for x in (rollout.reward, rollout.terminated,
                                                   rollout.truncated))
    adv, target = np.zeros((T, B)), np.zeros((T, B))
    for b in range(B):  # GAE on the behaviour values (on-policy: correction "none")
        r, disc = ref_fold_truncation(reward[:, b], old_v[1:, b], term[:, b], trunc[:, b],
                                      cfg.discount)
        adv[:, b] = ref_gae(r, disc, old_v[:-1, b], old_v[1:, b], cfg.gae_lambda)
        target[:, b] = adv[:, b] + old_v[:-1, b]
    flat = lambda x: x.reshape(-1)[idx]  # noqa: E731
    valid = flat(np.asarray(rollout.valid))
    a = flat(adv)[valid]
    a = (a - a.mean()) / (a.std() + 1e-8)
    ratio = np.exp(flat(logp)[valid] - flat(old_logp)[valid])
    eps = cfg.clip_eps
    policy = -np.mean(np.minimum(ratio * a, np.clip(ratio, 1 - eps, 1 + eps) * a))
    value_now, value_old, g = flat(v[:-1])[valid], flat(old_v[:-1])[valid], flat(target)[valid]
    clipped = value_old + np.clip(value_now - value_old, -cfg.value_clip_eps, cfg.value_clip_eps)
    value = 0.5 * np.mean(np.maximum((value_now - g) ** 2, (clipped - g) ** 2))
    ent = np.mean(flat(entropy)[valid])
    return {"loss/policy": policy, "loss/value": value, "policy/entropy": ent,
            "loss/total": policy + cfg.value_cost * value - cfg.entropy_cost * ent,
            "policy/clip_frac": np.mean(np.abs(ratio - 1) > eps),
            "policy/approx_kl": np.mean((ratio - 1) - np.log(ratio))}


@pytest.mark.parametrize("head", ["discrete", "tanh"])
def test_sample_minibatches_with_reset_steps_match_the_equations(head):
    """minibatch_axis="sample" on a rollout with episode ends and their reset steps
    (valid=False, garbage that must not count), against an independent reference: with one
    minibatch and one epoch the logged step is the loss at the initial parameters on every
    valid step; with two minibatches, the first SGD step's clip fraction and approx KL are
    those of the first minibatch's valid steps (shuffle off: the even flat steps)."""
    rollout = _rollout(4, head)
    assert 0 < int(np.sum(~np.asarray(rollout.valid))) < T * B // 2
    cfg = dataclasses.replace(BASE, minibatch_axis="sample", num_epochs=1, num_minibatches=1,
                              reward_clip=0.0, value_clip_eps=0.2, clip_eps=0.2)
    _, metrics = _learn_once(cfg, (0,), rollout, head)
    expected = _reference_loss_terms(cfg, rollout, head, np.arange(T * B))
    for k, want in expected.items():
        np.testing.assert_allclose(metrics[k], want, rtol=2e-4, atol=2e-6, err_msg=k)
    two = dataclasses.replace(cfg, num_minibatches=2)
    _, metrics = _learn_once(two, (0,), rollout, head)
    first = _reference_loss_terms(two, rollout, head, np.arange(0, T * B, 2))
    np.testing.assert_allclose(metrics["ppo/first_minibatch_clip_frac"],
                               first["policy/clip_frac"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics["ppo/first_minibatch_approx_kl"],
                               first["policy/approx_kl"], rtol=2e-4, atol=2e-6)
