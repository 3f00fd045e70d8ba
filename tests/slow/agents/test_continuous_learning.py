"""Learning tests with continuous and mixed actions, through the real runtime.

- PPO (synchronous, clipped Gaussian, observation normalisation, reward scaling, single-step
  minibatches) on EnvPool Pendulum-v1 with experiments/configs/ppo_mujoco.py:pendulum: a random
  policy scores about -1200..-1500; the run stops once the 100-episode mean passes -400
  (measured: ~60k steps, under a minute on 2 cores).
- PPO (asynchronous, V-trace) and IMPALA on a mixed Dict(Box, Discrete) action space
  (tests/fakes/mixed_env.py, passed to the runner via `make_env`): random ~9, the threshold 24 needs
  both sub-actions learned (measured: 16k-60k steps).
"""

from experiments import impala_atari, ppo_atari
from experiments.configs import impala_classic, ppo_classic, ppo_mujoco
from tests.helpers import quiet_config
from tests.fakes.mixed_env import SteerAndShiftEnv


PENDULUM_TARGET = -400.0
MIXED_TARGET = 24.0


def _quiet(config, tmp_path, total_env_steps, stop_at_return):
    return quiet_config(config, tmp_path, checkpoint_keep=0, total_env_steps=total_env_steps,
                        stop_at_return=stop_at_return)


def test_ppo_learns_pendulum(tmp_path):
    config = _quiet(ppo_mujoco.get_config("pendulum"), tmp_path, 300_000, PENDULUM_TARGET)
    result = ppo_atari.run(config)
    print("PPO Pendulum-v1:", result.env_steps, result.episode_summary)
    assert result.episode_summary["episode/return_best_mean"] >= PENDULUM_TARGET
    assert result.env_steps < 300_000, "should stop early once the target is reached"
    assert result.last_metrics["policy_lag/max"] == 0


def _mixed_env(num_envs, seed):
    return SteerAndShiftEnv(num_envs, seed)


def test_async_ppo_learns_mixed_actions(tmp_path):
    config = _quiet(ppo_classic.get_config(), tmp_path, 200_000, MIXED_TARGET)
    config.env.name = "SteerAndShift"  # names the run; the env comes from make_env
    assert not config.synchronous  # V-trace importance ratios from the joint log-prob
    result = ppo_atari.run(config, make_env=_mixed_env)
    print("async PPO, mixed actions:", result.env_steps, result.episode_summary)
    assert result.episode_summary["episode/return_best_mean"] >= MIXED_TARGET
    assert "ppo/rho_mean" in result.last_metrics


def test_impala_learns_mixed_actions(tmp_path):
    config = _quiet(impala_classic.get_config(), tmp_path, 200_000, MIXED_TARGET)
    config.env.name = "SteerAndShift"
    result = impala_atari.run(config, make_env=_mixed_env)
    print("IMPALA, mixed actions:", result.env_steps, result.episode_summary)
    assert result.episode_summary["episode/return_best_mean"] >= MIXED_TARGET
