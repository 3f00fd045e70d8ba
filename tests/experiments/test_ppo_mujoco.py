"""Smoke run of experiments/ppo_mujoco.py's `:debug` config on EnvPool HalfCheetah-v4.

A few updates through the whole stack with a continuous (clipped Gaussian) head, observation
normalisation, reward scaling and single-step minibatches; checks the statistics moved and
every executed action stayed inside the action bounds. The learning run itself is measured in
docs/mujoco.md (1M steps take ~35 min on 2 cores).
"""
import numpy as np

from experiments import ppo_mujoco
from experiments.configs import ppo_mujoco as configs
from sebulba import envs
from tests.helpers import quiet_config


def test_halfcheetah_debug_run(tmp_path):
    config = quiet_config(configs.get_config("debug"), tmp_path, checkpoint_keep=0)
    actions = []

    def make_env(n, seed):  # EnvPool, recording the actions the actors send
        env = envs.make_env(envs.EnvConfig(name=config.env.name), n, seed)
        step = env.step
        env.step = lambda a: (actions.append(np.array(a)), step(a))[1]
        return env

    result = ppo_mujoco.run(config, make_env=make_env)
    assert result.updates == config.total_env_steps // config.unroll_length
    assert np.isfinite(result.last_metrics["loss/total"])
    assert result.last_metrics["norm/return_std"] > 0
    obs_stats = result.learner_state.norm.obs
    # Every update adds its T x B observations (not the bootstrap one).
    assert float(obs_stats.count) == result.updates * config.unroll_length * config.num_envs
    assert np.all(np.asarray(obs_stats.var) != 1.0), "observation statistics never updated"
    acts = np.concatenate(actions)
    assert acts.shape[1] == 6 and acts.min() >= -1.0 and acts.max() <= 1.0
    assert (np.abs(acts) == 1.0).any(), "some samples should have been clipped to the bounds"
