"""A run whose action mask allows nothing on a step the env acts on stops, naming the env and
the update (podracer/legal.py: counted on the learner, raised by the ledger), on both
runtimes; with env.action_mask_empty=allow it runs on (the env's rule, e.g. jumanji's trapped
Snake). An unknown mask key or a mask of the wrong shape is one line at start."""
import gymnasium as gym
import jax
import numpy as np
import pytest

from anakin import learner, topology
from podracer.agent import Rollout
from experiments import train, wiring
from experiments.configs import impala_classic
from podracer import legal
from podracer.legal import NoLegalActionError
from podracer.validation import ConfigError
from sebulba import adapters, registry
from tests.helpers import quiet_config


class Stuck(gym.Env):
    """Three actions; from step 3 of each episode the mask allows none of them (a wrong mask,
    say an inverted one), until the episode's time limit of 6 steps (a TimeLimit wrapper)."""

    observation_space = gym.spaces.Dict({
        "x": gym.spaces.Box(0.0, 1.0, (2,), np.float32),
        "action_mask": gym.spaces.Box(0.0, 1.0, (3,), np.float32)})
    action_space = gym.spaces.Discrete(3)

    def _obs(self):
        return {"x": np.array([self.t / 6, 1.0], np.float32),
                "action_mask": np.full(3, float(self.t < 3), np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, False, False, {}  # the time limit of 6 cuts it


registry.register_env("Stuck-v0", lambda n, seed, cfg: adapters.gymnasium_env(
    lambda: gym.wrappers.TimeLimit(Stuck(), 6), n, seed))


def _config(tmp_path, **overrides):
    return quiet_config(impala_classic.get_config(), tmp_path / "run", num_envs=4,
                        unroll_length=8, total_env_steps=4 * 8 * 3, checkpoint_keep=0,
                        **{"env.name": "Stuck-v0", **overrides})


def test_sebulba_stops_on_a_mask_that_allows_nothing_and_runs_when_allowed(tmp_path):
    with pytest.raises(NoLegalActionError, match=r"env.name='Stuck-v0': \d+ step\(s\) of "
                                                 r"update 1 \(env steps up to 32\) acted on an "
                                                 r"observation whose action mask allows no "
                                                 r"action.*action_mask_empty=allow"):
        train.run(_config(tmp_path))
    result = train.run(_config(tmp_path, **{"env.action_mask_empty": "allow"}))
    assert result.updates == 3


def test_anakin_counts_the_steps_acted_on_a_mask_that_allows_nothing():
    """The learner part both runtimes share (anakin/learner.learn, sebulba/learner.py):
    the count covers the steps the env acted on (valid) only, over every device."""
    from tests.helpers import small_network
    from agents import impala
    net = small_network(gym.spaces.Discrete(3))
    agent = impala.make_agent(net, impala.ImpalaConfig(rmsprop_eps=1e-5, max_grad_norm=40.0),
                              10)
    T, B = 4, 4
    obs = np.zeros((T + 1, B, 5), np.float32)
    state = agent.init(jax.random.key(0), obs[0])
    flags = np.zeros((T, B), bool)
    flags[1, 0] = flags[2, 3] = flags[3, 1] = True
    valid = np.ones((T, B), bool)
    valid[3, 1] = False  # a reset step: its action is ignored, not counted
    ro = Rollout(obs=obs, action=np.zeros((T, B), np.int32),
                         reward=np.zeros((T, B), np.float32),
                         terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                         valid=valid, extras={"logp": np.full((T, B), -1.1, np.float32),
                                              legal.NO_LEGAL: flags}, core_state=None)
    mesh = topology.make_mesh((0, 1))
    _, metrics = learner.make_learn_fn(agent, mesh)(state, ro)
    assert float(metrics[legal.METRIC]) == 2.0


@pytest.mark.parametrize("key,match", [
    ("mask", r"env.action_mask_key='mask' is no entry of the observation \(entries: "
             r"\['action_mask', 'x'\]\)"),
    ("x", r"env.action_mask_key='x': the mask has shape \(2,\); the action head "
          r"Categorical\(num_actions=3\) takes \(3,\)"),
])
def test_a_bad_mask_key_is_one_line_at_start(tmp_path, key, match):
    with pytest.raises(ConfigError, match=match):
        train.run(_config(tmp_path, **{"env.action_mask_key": key}))


def test_the_env_section_refuses_an_unknown_empty_mask_rule(tmp_path):
    with pytest.raises(ConfigError, match=r"env.action_mask_empty='ignore' must be one of "
                                          r"\('error', 'allow'\)"):
        wiring.read(_config(tmp_path, **{"env.action_mask_empty": "ignore"}), devices=False,
                    env_id=False)
