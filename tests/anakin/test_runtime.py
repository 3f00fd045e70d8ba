"""The Anakin runtime (anakin/update_program.py, actor.py, learner.py) with the project's own
PPO agent, unchanged.

- Its rollouts are Sebulba Rollouts: the same learner step gives the same update under both
  runtimes (Sebulba's make_learn_fn over a Topology vs Anakin's learner part).
- N devices == 1 device on the whole batch for the whole compiled update (acting, env steps,
  learning), feed-forward and recurrent: per-env RNG streams and the gradient mean over the
  device axis (an N-times update, or device-dependent sampling, would break it).
- Episode statistics are true returns and lengths, and the rollout's flags follow EnvPool's
  convention (valid False exactly on the step after an episode end).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import agents.ppo as ppo
from anakin import actor, envs, host_games, learner, topology, update_program
from sebulba.learner import make_learn_fn as sebulba_learn_fn
from sebulba.learner import place_learner_state
from sebulba.topology import make_topology
from tests.helpers import small_network

T, B = 16, 8
CFG = ppo.PPOConfig(learning_rate=1e-3, clip_eps=0.2, reward_clip=0.0, shuffle=False,
                    num_minibatches=2, num_epochs=2, correction="none")


def _network(env, lstm: int = 0):
    return small_network(env.action_space, lstm_size=8 if lstm else 0)


def _agent(lstm: int = 0, cfg=CFG):
    env = envs.make_env("gymnax:CartPole-v1", {"max_steps_in_episode": 12})
    return ppo.make_agent(_network(env, lstm), cfg, num_updates=10), env


def _init(agent, env):
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    return agent.init(jax.random.key(1), example)


def _updates(agent, env, n_devices, n_updates=2, updates_per_call=1, lengths=None):
    """`n_updates` calls of the update program (or one call per entry of `lengths`, each
    running that many of the fused program's rounds)."""
    mesh = topology.make_mesh(tuple(range(n_devices)))
    state = topology.place_replicated(_init(agent, env), mesh)
    runner = topology.place_runner(actor.init_runner(agent, env, jax.random.key(7), B), mesh)
    update = update_program.make_update_fn(agent, env, mesh, T, updates_per_call)
    out = []
    for n in lengths or [None] * n_updates:
        kwargs = {} if n is None else {"n": n}
        state, runner, metrics, eps = update(state, runner, **kwargs)
        out.append((jax.device_get(metrics), host_games.local_episodes(eps)))
    return jax.device_get(state), jax.device_get(runner), out


def _close(a, b, rtol=2e-5, atol=1e-6):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=rtol, atol=atol), a, b)


def test_same_update_under_both_runtimes():
    agent, env = _agent()
    state = _init(agent, env)
    runner = actor.init_runner(agent, env, jax.random.key(3), B)
    _, ro, _ = jax.jit(lambda s, r: actor.rollout(agent, env, agent.actor_params(s), r, T))(
        state, runner)
    assert ro.obs.shape == (T + 1, B, 4) and ro.action.shape == (T, B)
    assert set(ro.extras) == {"logp", "policy", "value"}
    assert not bool(ro.valid.all())  # 12-step episodes: reset steps inside the rollout
    topo = make_topology([0], [0, 1], B)
    # Sebulba's learner donates its state: it gets its own copy (the same init).
    s_state, s_metrics = sebulba_learn_fn(agent, topo)(
        place_learner_state(_init(agent, env), topo), (jax.device_put(ro, topo.batch_sharded()),))
    mesh = topology.make_mesh((0, 1))
    a_state, a_metrics = learner.make_learn_fn(agent, mesh)(
        topology.place_replicated(state, mesh), ro)
    moved = max(float(np.abs(a - b).max()) for a, b in zip(
        jax.tree.leaves(a_state.params), jax.tree.leaves(state.params)))
    assert moved > 1e-4
    _close(jax.device_get(s_state.params), jax.device_get(a_state.params), rtol=0, atol=0)
    assert set(s_metrics) == set(a_metrics)
    for k in s_metrics:
        np.testing.assert_array_equal(s_metrics[k], a_metrics[k])


@pytest.mark.parametrize("lstm", [0, 1])
def test_n_devices_equal_one_device_on_the_whole_batch(lstm):
    agent, env = _agent(lstm)
    s1, r1, out1 = _updates(agent, env, 1)
    s4, r4, out4 = _updates(agent, env, 4)
    before = jax.device_get(_init(agent, env).params)
    assert max(float(np.abs(a - b).max()) for a, b in zip(
        jax.tree.leaves(s1.params), jax.tree.leaves(before))) > 1e-4
    _close(s1.params, s4.params)
    _close(r1.env.obs, r4.env.obs)  # the same envs took the same actions
    np.testing.assert_array_equal(r1.ep_length, r4.ep_length)
    for (m1, e1), (m4, e4) in zip(out1, out4):
        # The logged gradient norm catches an N-times gradient (Adam hides its scale).
        for k in ("optim/grad_norm", "loss/total", "adv/mean"):
            np.testing.assert_allclose(m1[k], m4[k], rtol=1e-4, atol=1e-6)
        assert sorted(e1) == sorted(e4) and e1


def test_env_streams_differ_per_env_and_device():
    agent, env = _agent()
    _, runner, _ = _updates(agent, env, 4, n_updates=1)
    obs = np.asarray(runner.env.obs)
    assert len({tuple(np.round(o, 6)) for o in obs}) == B  # no two envs alike
    keys = np.asarray(jax.random.key_data(runner.key)).reshape(B, -1)
    assert len({tuple(k) for k in keys}) == B


def test_rollout_flags_and_true_episode_returns():
    """CartPole with a 12-step limit pays 1 per step: every finished game returns its length;
    valid is False exactly after a terminated/truncated step; reset steps pay 0."""
    agent, env = _agent()
    state = _init(agent, env)
    runner = actor.init_runner(agent, env, jax.random.key(5), B)
    _, ro, eps = jax.jit(lambda s, r: actor.rollout(agent, env, agent.actor_params(s), r,
                                                      3 * T))(state, runner)
    ro, eps = jax.device_get((ro, eps))
    done = ro.terminated | ro.truncated
    np.testing.assert_array_equal(ro.valid[1:], ~done[:-1])
    assert ro.valid[0].all()
    np.testing.assert_array_equal(ro.reward[~ro.valid], 0.0)
    assert ro.truncated.any() and ro.terminated.any()
    np.testing.assert_array_equal(eps.over, done)
    np.testing.assert_array_equal(eps.ret[eps.over], eps.length[eps.over])
    assert eps.length[ro.truncated].min() == 12 and eps.length[eps.over].max() == 12


def test_fused_updates_equal_single_calls():
    """K updates fused into one call are the K single calls: the same state, and every update
    keeps its own metrics and its own finished games (the host accounts for each)."""
    agent, env = _agent()
    s1, r1, single = _updates(agent, env, 2, n_updates=4)
    s2, r2, fused = _updates(agent, env, 2, n_updates=2, updates_per_call=2)
    _close(s1.params, s2.params)
    _close(r1.env.obs, r2.env.obs)
    per_update = [({k: v[i] for k, v in metrics.items()}, games[i])
                  for metrics, games in fused for i in range(2)]
    assert len(per_update) == len(single) == 4
    for (m_fused, g_fused), (m_single, g_single) in zip(per_update, single):
        assert set(m_fused) == set(m_single)
        _close(m_fused, m_single)
        (g_single,) = g_single  # one update's games
        assert g_fused == g_single  # (return, length) of each game, in order
    assert sum(len(g) for _, g in per_update) > 0  # 12-step games end inside the calls


def test_a_fused_program_runs_any_call_length_up_to_k():
    """One compiled program of K = 4 rounds serves calls of 3 and then 1 update (a run's tail,
    or a checkpoint due mid-call): the same state and per-update metrics as 4 single calls,
    and the skipped rounds change nothing and output zeros."""
    agent, env = _agent()
    s1, r1, single = _updates(agent, env, 2, n_updates=4)
    s2, r2, fused = _updates(agent, env, 2, updates_per_call=4, lengths=[3, 1])
    _close(s1.params, s2.params)
    _close(r1.env.obs, r2.env.obs)
    assert int(s2.update) == 4
    ran = [({k: v[i] for k, v in metrics.items()}, games[i])
           for (metrics, games), n in zip(fused, [3, 1]) for i in range(n)]
    for (m_fused, g_fused), (m_single, (g_single,)) in zip(ran, single):
        _close(m_fused, m_single)
        assert g_fused == g_single
    metrics, games = fused[1]
    assert all(not np.any(v[1:]) for v in metrics.values())
    assert games[1:] == [[], [], []]


def test_recurrent_core_state_matches_what_the_actor_used():
    """The learner re-runs the LSTM from Rollout.core_state with resets where episodes start
    (agents/unroll.apply_time_major): it must reproduce the actor's log-probs exactly, in a
    second rollout that starts mid-episode with a non-zero state and crosses episode ends."""
    from agents import unroll
    agent, env = _agent(lstm=1)
    net = _network(env, lstm=1)
    state = _init(agent, env)
    ap = agent.actor_params(state)
    run = jax.jit(lambda r: actor.rollout(agent, env, ap, r, T))
    runner, _, _ = run(actor.init_runner(agent, env, jax.random.key(2), B))
    _, ro, _ = run(runner)
    assert float(np.abs(np.asarray(jax.tree.leaves(ro.core_state)[0])).max()) > 1e-3
    assert not bool(ro.valid.all())
    pol, _ = unroll.apply_time_major(net, state.params, jax.tree.map(lambda x: x[:-1], ro.obs),
                                     ro.core_state, ro.valid)
    logp = net.dist.log_prob(pol, ro.action)
    np.testing.assert_allclose(logp, ro.extras["logp"], rtol=1e-5, atol=1e-5)


def test_a_fused_calls_games_are_read_from_the_rounds_it_ran_only():
    """The host reads the first `rounds` rounds of a fused call's record [K, T, B] (the others
    were skipped): a game marked in a later round is not read, and single records ([T, B])
    read as one round."""
    from anakin import population
    over = np.zeros((4, 2, 3), bool)
    ret, length = np.arange(24.0).reshape(4, 2, 3), np.ones((4, 2, 3), np.int32)
    over[0, 1, 2] = over[1, 0, 0] = over[3, 0, 0] = True  # round 3 did not run
    record = actor.Episodes(over, ret, length)
    assert host_games.local_episodes(record, 2) == [[(5.0, 1)], [(6.0, 1)]]
    assert len(host_games.local_episodes(record)) == 4
    assert host_games.local_episodes(actor.Episodes(over[0], ret[0], length[0])) == [[(5.0, 1)]]
    members = actor.Episodes(over[:, None].repeat(2, 1), ret[:, None].repeat(2, 1),
                               length[:, None].repeat(2, 1))  # [K, M=2, T, B]
    assert population.local_episodes(members, 2, 3) == [[[(5.0, 1)]] * 2, [[(6.0, 1)]] * 2,
                                                        [[], []]]
    one = actor.Episodes(*(x[0] for x in members[:3]))  # one update's record [M, T, B]
    assert population.local_episodes(one, 2) == [[[(5.0, 1)]] * 2]


def test_on_an_accelerator_the_skipped_rounds_are_sliced_off_before_the_copy(monkeypatch):
    """host_episodes slices a fused call's record on the device where the device is not the
    CPU (read here by pretending it is not): only the rounds that ran reach the host, and
    the games read are those of the CPU path."""
    over = np.zeros((4, 2, 3), bool)
    over[0, 1, 2] = over[3, 0, 0] = True
    record = actor.Episodes(jnp.asarray(over), jnp.arange(24.0).reshape(4, 2, 3),
                              jnp.ones((4, 2, 3), jnp.int32))
    on_cpu = host_games.local_episodes(record, 2)
    sliced = []
    monkeypatch.setattr(host_games, "_on_accelerator", lambda x: sliced.append(x.shape) or True)
    host = host_games.host_episodes(record, 2)
    assert [h.shape for h in host[:3]] == [(2, 2, 3)] * 3 and sliced == [(4, 2, 3)] * 3
    assert host_games.local_episodes(record, 2) == on_cpu == [[(5.0, 1)], []]
