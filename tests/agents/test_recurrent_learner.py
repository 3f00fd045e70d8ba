"""Recurrent (LSTM) agents: actors and learner agree on the core state, and the sharded
learner step equals one device on the whole batch, for IMPALA and PPO and several heads.

The actor test runs a real ActorThread on a small env with short episodes crossing rollout
boundaries, then re-runs the network over each rollout from its stored `core_state` as the
learner does: it must reproduce the actor's policy and values at every step (including reset
steps and the bootstrap observation, which the next rollout's first step sees).
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import agents.impala as impala
import agents.ppo as ppo
import networks
from agents.acting import init_params
from agents.unroll import apply_time_major
from podracer.agent import Rollout
from sebulba.learner import make_learn_fn, place_learner_state
from sebulba.topology import make_topology
from tests.helpers import IMPALA_640, ACTION_SPACES, episode_ends, head_network, run_actor
from tests.fakes.mixed_env import SteerAndShiftEnv

T, B, OBS, LSTM = 6, 8, 4, 8


def _network(head="discrete", shared=True):
    return head_network(head, lstm_size=LSTM, shared_torso=shared)


def _rollout(net, seed=0) -> Rollout:
    """Random observations and episode ends; behaviour outputs from an unroll of other
    parameters from a random stored state, as a recurrent actor would produce them."""
    rng = np.random.default_rng(seed)
    obs = jnp.asarray(3.0 + 5.0 * rng.normal(size=(T + 1, B, OBS)), jnp.float32)
    terminated, truncated, valid = episode_ends(rng, T, B, 0.15)
    core_state = jax.tree.map(lambda x: jnp.asarray(rng.normal(size=(1,) + x.shape),
                                                    jnp.float32), net.initial_state(B))
    behaviour = init_params(net, jax.random.key(123), obs[0])
    pi, value = apply_time_major(net, behaviour, obs[:-1], core_state, jnp.asarray(valid))
    pi = jax.tree.map(lambda x: x * 5.0, pi)  # clearly different from the learner's
    action = jax.vmap(net.dist.sample)(pi, jax.random.split(jax.random.key(seed), T))
    return Rollout(obs=obs, action=action,
                   reward=jnp.asarray(rng.normal(size=(T, B)), jnp.float32),
                   terminated=jnp.asarray(terminated), truncated=jnp.asarray(truncated),
                   valid=jnp.asarray(valid), core_state=core_state,
                   extras={"logp": jax.vmap(net.dist.log_prob)(pi, action), "policy": pi,
                           "value": value})


def _learn(agent, learner_ids, rollout):
    topo = make_topology((0,), learner_ids, B)
    state = place_learner_state(agent.init(jax.random.key(0), rollout.obs[0]), topo)
    state, metrics = make_learn_fn(agent, topo)(state, (jax.device_put(rollout,
                                                                       topo.batch_sharded()),))
    return jax.device_get(state), jax.device_get(metrics)


def _assert_same_update(agent, net, rollout, learners):
    single, m1 = _learn(agent, (0,), rollout)
    multi, mn = _learn(agent, learners, rollout)
    before = agent.init(jax.random.key(0), rollout.obs[0]).params
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: np.abs(a - b).max(), single.params,
                                         jax.device_get(before)))
    assert max(moved) > 1e-3, "the update must actually move the parameters"
    recurrent_kernel = lambda p: p["params"]["policy_core"]["lstm"]["cell"]["hi"]["kernel"]
    core_moved = np.abs(recurrent_kernel(single.params) - recurrent_kernel(before)).max()
    assert core_moved > 1e-6, "the LSTM's recurrent weights must get gradients"
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                 single.params, multi.params)
    for k in ("optim/grad_norm", "loss/total"):
        np.testing.assert_allclose(m1[k], mn[k], rtol=1e-4, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("shared", [True, False])
def test_impala_lstm_sharded_equals_single_device(shared):
    net = _network(shared=shared)
    cfg = impala.ImpalaConfig(learning_rate=1e-2, max_grad_norm=0.0,
                              rmsprop_eps=IMPALA_640["rmsprop_eps"])
    _assert_same_update(impala.make_agent(net, cfg, num_updates=10), net, _rollout(net),
                        (0, 1, 2, 3))


PPO = ppo.PPOConfig(shuffle=False, num_epochs=2, num_minibatches=2, learning_rate=1e-2,
                    lr_decay=False, correction="none")


@pytest.mark.parametrize("cfg,learners,head", [
    (PPO, (0, 1), "discrete"),
    (dataclasses.replace(PPO, correction="vtrace", loop="unroll", obs_norm=True), (0, 1, 2, 3),
     "mixed"),
    (dataclasses.replace(PPO, correction="vtrace"), (0, 1), "tanh")],
    ids=["gae_scan_discrete", "vtrace_unroll_obsnorm_mixed", "vtrace_scan_tanh"])
def test_ppo_lstm_sharded_equals_single_device(cfg, learners, head):
    net = _network(head)
    agent = ppo.make_agent(net, cfg, num_updates=10, batch_envs=B)
    _assert_same_update(agent, net, _rollout(net, seed=1), learners)


def test_ppo_refuses_sample_minibatches_with_a_recurrent_network():
    cfg = dataclasses.replace(PPO, minibatch_axis="sample")
    with pytest.raises(ValueError, match=r"agent\.minibatch_axis='sample' cannot be used "
                                         r"with network\.lstm_size=\d+: a recurrent core"):
        ppo.make_agent(_network(), cfg, num_updates=10)


def test_learner_unroll_reproduces_what_the_actor_computed():
    """ActorThread + PPO's actor_step on a mixed-action env whose episodes (5 steps + a reset
    step) cross the 7-step rollouts: the learner's re-run from each stored core_state gives
    the actor's policy and values, and V(bootstrap obs) is the next rollout's first value."""
    env_b, unroll, n = 4, 7, 4
    net = _network("mixed")
    agent = ppo.make_agent(net, PPO, num_updates=10)
    env0 = SteerAndShiftEnv(env_b, 0, length=5)
    state = agent.init(jax.random.key(3), env0.reset())
    topo = make_topology((0,), (1, 2), env_b)
    msgs, _ = run_actor(n, agent.actor_params(state), agent=agent,
                        make_env=lambda seed: SteerAndShiftEnv(env_b, seed, length=5), seed=7,
                        unroll_length=unroll, learner_sharding=topo.local_batch_sharded())
    rollouts = [jax.device_get(m.rollout) for m in msgs]
    assert not np.all(rollouts[0].valid) and not np.all(rollouts[-1].valid)
    # The first rollout starts from the zero state; later ones carry the memory over.
    jax.tree.map(lambda x: np.testing.assert_array_equal(x, 0.0), rollouts[0].core_state)
    assert max(np.abs(x).max() for x in jax.tree.leaves(rollouts[1].core_state)) > 1e-3
    for k, r in enumerate(rollouts):
        pi, v = apply_time_major(net, state.params, r.obs, r.core_state, r.valid)
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a[:-1], b, rtol=1e-4, atol=1e-5),
                     pi, r.extras["policy"])
        np.testing.assert_allclose(v[:-1], r.extras["value"], rtol=1e-4, atol=1e-5)
        if k + 1 < n:
            np.testing.assert_allclose(v[-1], rollouts[k + 1].extras["value"][0], rtol=1e-4,
                                       atol=1e-5)


@pytest.mark.parametrize("algo,overrides,match", [
    ("impala", {"lstm_size": -1}, r"network\.lstm_size=-1 must be an integer >= 0"),
    ("impala", {"lstm_size": 2.5}, r"network\.lstm_size=2\.5 has type float; expected int"),
    ("ppo", {"lstm_size": 16, "minibatch_axis": "sample"},
     r"agent\.minibatch_axis='sample' cannot be used with network\.lstm_size=16")])
def test_config_validation_names_the_recurrent_fields(tmp_path, algo, overrides, match):
    from experiments import wiring
    from experiments.configs import impala_classic, ppo_classic
    config = (impala_classic if algo == "impala" else ppo_classic).get_config()
    config.run_dir = str(tmp_path / "run")
    with config.network.ignore_type():
        config.network.lstm_size = overrides["lstm_size"]
    if "minibatch_axis" in overrides:
        config.agent.minibatch_axis = overrides["minibatch_axis"]
    with pytest.raises(ValueError, match=match):
        wiring.read(config, agent=algo)


def test_config_switch_builds_the_recurrent_network(tmp_path):
    from experiments import wiring
    from experiments.configs import impala_classic
    config = impala_classic.get_config()
    config.network.lstm_size = 16
    _, net, _ = wiring.build_from_config(config, ACTION_SPACES["discrete"])
    assert isinstance(net, networks.RecurrentActorCritic) and net.lstm_size == 16
    config.network.lstm_size = 0
    _, net, _ = wiring.build_from_config(config, ACTION_SPACES["discrete"])
    assert not networks.is_recurrent(net)
