"""Greedy evaluation of an agent that builds its own network (docs/howto_network.md, "A
different head"): the agent's own `greedy_step` plays that network; without one, greedy play of
the config's network is refused when the run starts, with one error naming the way out."""
import importlib

import jax
import numpy as np
import pytest

from agents import evaluation as players
from podracer.validation import ConfigError
from tests.fakes import wide_head
from tests.helpers import IMPALA_640, build_agent


def _agent(make_config, name: str):
    config = make_config(agent_name=name)
    network, agent, obs = build_agent(config, num_envs=3)
    return config, network, agent, obs, agent.actor_params(agent.init(jax.random.key(0), obs))


def test_greedy_play_uses_the_agents_own_network(impala_classic_config):
    _, network, agent, obs, ap = _agent(impala_classic_config, wide_head.AGENT)
    assert agent.greedy_step is not None
    player = players.eval_player("greedy", network, agent, ap, obs)  # traced here: no error
    action = player.actor(ap, 3).act(obs, jax.random.key(0))
    head = wide_head.head_of(network)
    policy, _ = head.apply(ap.params, obs)
    np.testing.assert_array_equal(action, np.argmax(np.asarray(policy), -1))
    # The config's network is another one: its parameters do not fit the agent's.
    with pytest.raises(Exception, match="Could not find parameter"):
        network.apply(ap.params, obs)


def test_greedy_play_of_the_config_network_is_refused_up_front(impala_classic_config):
    _, network, agent, obs, ap = _agent(impala_classic_config, wide_head.AGENT_NO_GREEDY)
    with pytest.raises(players.EvalPolicyError) as e:
        players.eval_player("greedy", network, agent, ap, obs)
    message = str(e.value)
    assert "cannot play the agent's actor_params" in message
    assert "ScopeParamNotFoundError" in message and "--policy sample" in message
    assert "eval_policy=sample" in message and "\n" not in message
    # Shapes are enough (what the run checks with), and sampling plays any agent.
    shapes = jax.eval_shape(lambda: ap)
    with pytest.raises(players.EvalPolicyError):
        players.eval_player("greedy", network, agent, shapes, obs)
    sampled = players.eval_player("sample", network, agent, ap, obs).actor(ap, 3)
    assert np.asarray(sampled.act(obs, jax.random.key(1))).shape == (3,)


class _Started(Exception):
    """Raised by the stand-in for the runtime's train: the run got past its start checks."""


@pytest.mark.parametrize("name,policy,ok", [(wide_head.AGENT, "greedy", True),
                                            (wide_head.AGENT_NO_GREEDY, "greedy", False),
                                            (wide_head.AGENT_NO_GREEDY, "sample", True)])
def test_a_run_checks_its_eval_policy_before_training_starts(impala_classic_config, monkeypatch,
                                                             name, policy, ok):
    def train(*args, **kwargs):
        raise _Started()
    # The runner the Sebulba driver hands the run to (after every start check).
    monkeypatch.setattr(importlib.import_module("sebulba.runner"), "train", train)
    from experiments import train as entry
    config = impala_classic_config(agent_name=name, eval_every_updates=5,
                                   eval_policy=policy, checkpoint_keep=0)
    if ok:
        with pytest.raises(_Started):
            entry.run(config)
        return
    with pytest.raises(ConfigError, match=r"^eval_policy='greedy': greedy evaluation plays "
                                          r"the network config.network describes") as e:
        entry.run(config)
    assert "--config.eval_policy=sample" in str(e.value)


@pytest.mark.parametrize("lstm_size", [0, 8])
def test_the_agents_greedy_step_plays_as_the_network_player(lstm_size):
    """IMPALA's greedy_step, carried through games with resets, acts as greedy play of the
    network it was built with (recurrent: the same core state resets as the actors)."""
    from gymnasium import spaces

    from agents import impala
    from tests.helpers import small_network
    net = small_network(spaces.Discrete(3), hidden_sizes=(8,), lstm_size=lstm_size)
    agent = impala.make_agent(net, impala.ImpalaConfig(**IMPALA_640), 10)
    obs = np.random.default_rng(0).normal(size=(5, 4, 6)).astype(np.float32)
    ap = agent.actor_params(agent.init(jax.random.key(0), obs[0]))
    ours = players.eval_player("greedy", None, agent, ap, obs[0]).actor(ap, 4)
    theirs = players.network_player(net).actor(ap, 4)
    done = np.zeros((5, 4), bool)
    done[1, 0] = done[2, 3] = True
    for t in range(5):
        a = ours.act(obs[t], jax.random.key(t))
        np.testing.assert_array_equal(a, theirs.act(obs[t], jax.random.key(t)))
        for actor in (ours, theirs):
            actor.observe(done[t], np.zeros(4, bool))
        # The core state after each step (an action can agree by chance; the state cannot).
        jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6),
                     ours._state, theirs._state)
    assert (ours._state is None) == (lstm_size == 0)
