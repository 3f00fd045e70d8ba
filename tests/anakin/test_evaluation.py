"""Each runtime evaluates its own kind of env (docs/architecture.md, "Evaluation"): Anakin plays
a JAX env's games on the device (anakin/evaluation.py), Sebulba plays host env batches
(sebulba/evaluation.py `play`, here on the same JAX env through sebulba/jax_host_env.py). With
the same seed both draw the same key streams, so they must play the very same games: the same
returns and lengths, game by game, greedy or sampled, feed-forward or recurrent."""
import jax
import numpy as np
import pytest

import agents.impala as impala
from agents import evaluation as players
from anakin import envs
from anakin.evaluation import make_play
from sebulba import evaluation
from sebulba.jax_host_env import HostEnv
from tests.helpers import IMPALA_640, small_network


def _setup(lstm_size):
    env = envs.make_env("gymnax:CartPole-v1", {"max_steps_in_episode": 30})
    net = small_network(env.action_space, hidden_sizes=(8,), lstm_size=lstm_size)
    agent = impala.make_agent(net, impala.ImpalaConfig(**IMPALA_640), 10)
    ap = agent.actor_params(agent.init(jax.random.key(0), np.zeros((1, 4), np.float32)))
    return env, agent, ap


@pytest.mark.parametrize("lstm_size", [0, 8])
@pytest.mark.parametrize("greedy", [True, False])
def test_device_games_are_the_host_loops_games(lstm_size, greedy):
    env, agent, ap = _setup(lstm_size)
    player = players.agent_player(agent, greedy=greedy)
    episodes, num_envs, seed = 7, 3, 11
    on_device = make_play(env, player, episodes, num_envs, chunk=16)(ap, seed)
    on_host = evaluation.play(lambda n: player.actor(ap, n), lambda n, s: HostEnv(env, n, s),
                              episodes, num_envs, seed)
    assert on_device == on_host and on_host[2] == {}  # no episode metrics asked for
    returns, lengths, _ = on_device
    assert len(returns) == episodes and returns == [float(n) for n in lengths]  # CartPole
    assert all(1 <= n <= 30 for n in lengths)


def test_the_device_loop_stops_between_chunks():
    env, agent, ap = _setup(0)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 1  # after one chunk
    player = players.agent_player(agent, greedy=True)
    returns, _, _ = make_play(env, player, 1000, 2, chunk=4)(ap, 0, stop)
    assert len(calls) == 2 and len(returns) < 1000


def test_device_games_report_the_host_loops_episode_metrics():
    """A JAX env whose info reports a crash flag, a speed and the reward's terms: the device
    loop's per-game metrics are the host loop's (sebulba's EpisodeCounter over HostEnv, whose
    TimeStep carries the info), and each game's terms add up to its return."""
    from podracer.episode_metrics import parse, resolve
    from tests.fakes import scored_env
    env = envs.make_env(scored_env.NAME)
    metrics = resolve(parse("crashed:max,speed:mean,rewards.*:sum"), envs.info_fields(env), "")
    assert HostEnv(env, 1, 0).info_fields == envs.info_fields(env)
    net = small_network(env.action_space, hidden_sizes=(8,))
    agent = impala.make_agent(net, impala.ImpalaConfig(**IMPALA_640), 10)
    ap = agent.actor_params(agent.init(jax.random.key(0), np.zeros((1, 2), np.float32)))
    player = players.agent_player(agent, greedy=False)
    on_device = make_play(env, player, 9, 3, chunk=8, metrics=metrics)(ap, 5)
    on_host = evaluation.play(lambda n: player.actor(ap, n), lambda n, s: HostEnv(env, n, s),
                              9, 3, 5, metrics=metrics)
    returns, lengths, values = on_device
    assert lengths == on_host[1]  # the same games (the host sums rewards in float64)
    np.testing.assert_allclose(returns, on_host[0], rtol=1e-6)
    assert values.keys() == on_host[2].keys() == {
        "crashed", "speed", "rewards/progress", "rewards/cost", "rewards/crash"}
    for name in values:
        np.testing.assert_allclose(values[name], on_host[2][name], rtol=1e-6)
    terms = np.sum([values[f"rewards/{t}"] for t in ("progress", "cost", "crash")], axis=0)
    np.testing.assert_allclose(terms, returns, rtol=1e-5)
    crashed = np.array(values["crashed"])
    assert set(crashed) <= {0.0, 1.0} and 0 < crashed.sum() < 9  # some games crash, some not
    np.testing.assert_allclose(values["rewards/crash"], -crashed)
