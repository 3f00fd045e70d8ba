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
    assert on_device == on_host[:2] and on_host[2] == {}  # no episode metrics asked for
    returns, lengths = on_device
    assert len(returns) == episodes and returns == [float(n) for n in lengths]  # CartPole
    assert all(1 <= n <= 30 for n in lengths)


def test_the_device_loop_stops_between_chunks():
    env, agent, ap = _setup(0)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 1  # after one chunk
    player = players.agent_player(agent, greedy=True)
    returns, _ = make_play(env, player, 1000, 2, chunk=4)(ap, 0, stop)
    assert len(calls) == 2 and len(returns) < 1000
