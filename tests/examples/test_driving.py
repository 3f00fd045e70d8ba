"""The driving example: env semantics (multi-tensor obs, mixed actions, the reset step, the
delayed turn-signal penalty), its scenarios (env.randomize, a curriculum) and smoke runs of its
documented commands."""
import os

import numpy as np
import pytest

import examples.driving  # noqa: F401  registers Driving-v0 and driving_net
from examples.driving import config as driving_config
from examples.driving.env import CRASH, DrivingEnv
from podracer.curriculum import TrainingProgress
from sebulba import envs
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


def _gaps(env: DrivingEnv) -> np.ndarray:
    """[B, NUM_CARS - 1] distances between consecutive parked cars of each env."""
    return np.diff(np.sort(env._cars[:, :, 1], axis=1), axis=1)


def test_scenarios_follow_a_schedule_and_set_the_traffic():
    """Driving-v0 under a scheduled env.randomize: each reset draws car_gap from the
    distribution at the progress handed (an evaluation's None: the schedule's end), reports it
    in info["scenario"], and places the parked cars car_gap to 2 car_gap apart."""
    cfg = envs.EnvConfig(name="Driving-v0", randomize=(
        "car_gap=uniform(8.0, 9.0) -> uniform(2.0, 3.0) over 1000 env_steps; "
        "sensor_noise=choice(0.0, 0.1)"))
    batch = envs.make_env(cfg, 16, seed=0)
    assert batch.reads_progress
    for progress, (lo, hi) in [(TrainingProgress(0.0, 0), (8.0, 9.0)),
                               (TrainingProgress(500.0, 5), (5.0, 6.0)),
                               (TrainingProgress(4000.0, 40), (2.0, 3.0)), (None, (2.0, 3.0))]:
        batch.set_progress(progress)
        batch.reset()
        gap = batch.step(_act(16)).info["scenario"]["car_gap"]
        assert ((lo <= gap) & (gap < hi + 1e-6)).all(), (progress, gap)
        assert (_gaps(batch) >= gap[:, None] - 1e-5).all()
        assert (_gaps(batch) <= 2 * gap[:, None] + 1e-5).all()
    noise = batch.step(_act(16)).info["scenario"]["sensor_noise"]
    assert set(noise.tolist()) == {0.0, np.float32(0.1)}
    # Env i draws from seed + i: a batch of envs 2-3 alone (a worker's share) draws the same.
    whole, part = envs.make_env(cfg, 16, seed=0), envs.make_env(cfg, 2, seed=2)
    for b in (whole, part):
        b.set_progress(TrainingProgress(0.0, 0))
        b.reset()
    np.testing.assert_array_equal(part._scenario["car_gap"], whole._scenario["car_gap"][2:4])


def test_scenario_fields_are_checked():
    with pytest.raises(ValueError, match=r"lanes.*car_gap"):
        envs.make_env(envs.EnvConfig(name="Driving-v0", randomize="lanes=choice(2, 4)"), 2, 0)
    with pytest.raises(ValueError, match=r"options car_gap=1.0; it must be > 1.6"):
        DrivingEnv(2, seed=0, car_gap=1.0)
    with pytest.raises(ValueError, match=r"env.randomize drew steer_noise=-.*must be >= 0"):
        DrivingEnv(2, seed=0, randomize="steer_noise=uniform(-2.0, -1.0)").reset()
    assert not DrivingEnv(2, seed=0, randomize="car_gap=uniform(3, 4)").reads_progress


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
