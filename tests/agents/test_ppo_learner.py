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
