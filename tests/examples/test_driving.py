"""The driving example: env semantics (multi-tensor obs, mixed actions, the reset step, the
delayed turn-signal penalty) and smoke runs of its two documented commands."""
import os

import numpy as np
import pytest

import examples.driving  # noqa: F401  registers Driving-v0 and driving_net
from examples.driving import config as driving_config
from examples.driving.env import CRASH, DrivingEnv
from tests.helpers import ROOT, quiet_config


def _act(n, steer=0.0, throttle=0.0, signal=0):
    return {"steer": np.full((n, 1), steer, np.float32),
            "throttle": np.full((n, 1), throttle, np.float32),
            "signal": np.full(n, signal, np.int32)}


def test_observations_match_the_spaces_and_time_limit_truncates():
    env = DrivingEnv(3, seed=0, max_steps=4, steer_noise=0.0)
    obs = env.reset()
    assert obs["grid"].shape == (3, 16, 16, 1) and obs["grid"].dtype == np.uint8
    assert obs["state"].shape == (3, 6) and obs["state"].dtype == np.float32
    assert env.observation_space.contains({k: v[0] for k, v in obs.items()})
    assert (obs["grid"] == 128).any()  # the road edges are in view
    steps = [env.step(_act(3)) for _ in range(5)]
    assert not any(ts.truncated.any() or ts.terminated.any() for ts in steps[:3])
    assert steps[3].truncated.all() and steps[3].episode_over.all()
    assert (steps[4].reward == 0).all() and not steps[4].truncated.any()  # the reset step


def test_crash_terminates_then_reset_step():
    env = DrivingEnv(2, seed=0, steer_noise=0.0)
    env.reset()
    # Hard left at full speed leaves the road (x < 0) within a few steps.
    for t in range(40):
        ts = env.step(_act(2, steer=-1.0, throttle=1.0, signal=1))
        if ts.terminated.all():
            break
    assert ts.terminated.all() and (ts.reward == CRASH).all()
    reset = env.step(_act(2, steer=-1.0, throttle=1.0))
    assert (reset.reward == 0).all() and not reset.terminated.any()
    assert np.allclose(reset.obs["state"][:, 3], 0.0, atol=0.1)  # back in the middle lane


def test_reward_terms_add_up_to_the_reward_and_crashed_marks_the_crash():
    """Random driving: each step's info names the reward's terms, which sum to the reward
    (reset steps: all 0), and `crashed` is the termination the crash term pays for."""
    env = DrivingEnv(8, seed=1)
    env.reset()
    rng = np.random.default_rng(0)
    crashes = 0
    for _ in range(300):
        ts = env.step({"steer": rng.uniform(-1, 1, (8, 1)).astype(np.float32),
                       "throttle": rng.uniform(-1, 1, (8, 1)).astype(np.float32),
                       "signal": rng.integers(0, 3, 8)})
        terms = ts.info["rewards"]
        assert set(terms) == {"progress", "steering", "checkpoint", "signal", "crash"}
        np.testing.assert_allclose(sum(terms.values()), ts.reward, atol=1e-6)
        np.testing.assert_array_equal(ts.info["crashed"], ts.terminated)
        np.testing.assert_array_equal(terms["crash"], np.where(ts.terminated, CRASH, 0.0))
        crashes += int(ts.terminated.sum())
    assert crashes > 0


def _change_lane(signal: int) -> float:
    """Drives from the middle lane to the left one with `signal`; the return of the move."""
    env = DrivingEnv(1, seed=0, steer_noise=0.0, sensor_noise=0.0)
    env.reset()
    env._cars[:, :, 1] += 1000.0  # no parked cars in the way
    total = 0.0
    for _ in range(60):  # steer towards the left lane's centre (x = 0.5) and settle there
        heading = np.clip(1.0 * (0.5 - env._x[0]), -0.5, 0.5)
        steer = np.clip((heading - env._heading[0]) / 0.15, -1.0, 1.0)
        total += float(env.step(_act(1, steer=steer, signal=signal)).reward[0])
    assert env._lane[0] == 0.0 and abs(env._x[0] - 0.5) < 0.1, env._x
    return total


def test_unsignalled_lane_change_costs_one_later():
    assert np.isclose(_change_lane(signal=0) - _change_lane(signal=1), -1.0, atol=1e-4)


@pytest.mark.parametrize("variant", ["ppo_auto", "impala_auto"])
def test_auto_variants_use_the_built_in_torso_with_the_same_heads(tmp_path, variant):
    """The `_auto` variants swap the example's torso for the library's `auto` (an encoder per
    observation key) and keep the agent, env and action heads of their base variant."""
    from experiments import wiring
    from networks import MultiInput, encoders
    env = DrivingEnv(2, seed=0)
    nets = {}
    for name in (variant, variant.split("_")[0]):
        config = quiet_config(driving_config.get_config(name), tmp_path / name)
        nets[name] = wiring.build_network(wiring.read(config, devices=False, env_id=False),
                                          env.action_space)
    auto, own = nets.values()
    base, mine = (driving_config.get_config(n) for n in (variant.split("_")[0], variant))
    assert mine.agent.to_dict() == base.agent.to_dict() and mine.env == base.env
    assert isinstance(auto.torso, MultiInput) and auto.dist == own.dist
    assert encoders.describe(auto.torso, env.reset()) == [
        "grid (16, 16, 1) uint8 -> minatar_cnn", "state (6,) float32 -> mlp"]


def test_the_readme_table_is_the_one_results_py_recomputes():
    """examples/driving/README.md's table of the built-in torso against the example's own is
    the one its per-seed results.csv gives."""
    from examples.driving import results
    readme = open(os.path.join(ROOT, "examples", "driving", "README.md")).read()
    assert results.table() in readme
