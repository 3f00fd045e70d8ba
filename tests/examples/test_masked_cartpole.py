"""The masked-CartPole example: the observation really hides the velocities (and adds the
configured noise), and its documented command runs."""

import numpy as np
import pytest

import examples.masked_cartpole  # noqa: F401  registers MaskedCartPole-v1
from examples.masked_cartpole import config as masked_config
from sebulba import envs
from sebulba.evaluation import eval_env_config


def _env(noise_std: float, n: int = 2):
    config = masked_config.get_config("lstm")
    config.env.options.noise_std = noise_std
    return envs.make_env(eval_env_config(config), n, seed=3)


def test_only_position_and_angle_are_observed():
    env = _env(0.0)
    obs = env.reset()
    assert obs.shape == (2, 2) and env.observation_space.shape == (2,)
    # Pushing right for a few steps moves the cart right: the kept entries are x and theta.
    for _ in range(5):
        ts = env.step(np.ones(2, np.int64))
    assert (ts.obs[:, 0] > obs[:, 0]).all()
    assert np.abs(ts.obs[:, 1]).max() < 0.21  # an angle (CartPole ends past 0.2095 rad)
    env.close()


def test_noise_is_added_and_checked():
    a, b = _env(0.0).reset(), _env(0.5).reset()
    assert np.abs(a - b).max() > 0.05  # same seeds, noisy sensors
    config = masked_config.get_config("lstm")
    config.env.options.noise_std = -1.0
    with pytest.raises(ValueError, match="noise_std=-1.0 must be >= 0"):
        envs.make_env(eval_env_config(config), 1, seed=0).reset()
