"""Randomised scenarios on EnvPool ids (sebulba/scenario_pools.py): a batch split into pools of
drawn options.

- Each pool is built with its own drawn options (EnvPool's own config says so), envs keep their
  seeds, every env's info reports its pool's scenario; the pools differ; draws follow the seed.
- `send`/`recv` give what `step` gives (the actor's half-pool overlap runs on it).
- What a pool can vary (numeric options, not sizes, seeds, threads, the time limit or
  rendering), refused in one line otherwise, and only options that keep the spaces; a
  training run logs the return per bin, and scripts/evaluate.py plays held-out options.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from experiments import train
from scripts import evaluate
from podracer.validation import ConfigError
from sebulba import envs, scenario_pools

HIGHWAY = envs.EnvConfig(name="HighwayFast-v0", episode_metrics="", scenario_pools=3,
                         randomize="vehicles_density=uniform(0.5, 2.0); "
                                   "vehicles_count=choice(10, 30)")


def test_each_pool_is_built_with_its_drawn_options():
    batch = envs.make_env(HIGHWAY, 7, seed=4)
    try:
        assert isinstance(batch, scenario_pools.ScenarioPools)
        sizes = [pool.num_envs for pool in batch._pools]
        assert sizes == [3, 2, 2]
        for pool, drawn in zip(batch._pools, batch.scenarios):
            config = pool._env.spec.config
            assert config.vehicles_density == pytest.approx(drawn["vehicles_density"])
            assert config.vehicles_count == drawn["vehicles_count"] in (10, 30)
            assert 0.5 <= drawn["vehicles_density"] < 2.0
        assert len({s["vehicles_density"] for s in batch.scenarios}) == 3
        assert [p._env.spec.config.seed for p in batch._pools] == [4, 7, 9]  # seed + lo
        batch.reset()
        ts = batch.step(np.zeros(7, np.int64))
        assert ts.obs.shape == (7, 5, 5) and ts.reward.shape == (7,)
        density = ts.info["scenario"]["vehicles_density"]
        np.testing.assert_allclose(density, np.repeat([s["vehicles_density"]
                                                       for s in batch.scenarios], sizes))
        assert ts.info["crashed"].shape == (7,)
        again = envs.make_env(HIGHWAY, 7, seed=4)
        assert again.scenarios == batch.scenarios
        again.close()
    finally:
        batch.close()


def test_send_recv_gives_what_step_gives():
    a, b = envs.make_env(HIGHWAY, 4, seed=1), envs.make_env(HIGHWAY, 4, seed=1)
    try:
        np.testing.assert_array_equal(a.reset(), b.reset())
        rng = np.random.default_rng(0)
        for _ in range(40):
            action = rng.integers(0, 5, 4)
            x = a.step(action)
            b.send(action)
            y = b.recv()
            np.testing.assert_array_equal(x.obs, y.obs)
            for f in ("reward", "terminated", "truncated", "episode_over"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
    finally:
        a.close()
        b.close()


def test_what_a_pool_can_vary():
    allowed = scenario_pools.variable_options("HighwayFast-v0")
    assert {"vehicles_density", "vehicles_count", "lanes_count", "collision_reward"} <= set(
        allowed)
    assert not {"num_envs", "seed", "max_episode_steps", "screen_width"} & set(allowed)
    with pytest.raises(ValueError, match=r"EnvPool HighwayFast-v0 cannot vary "
                                         r"'max_episode_steps'; the fields it can vary: .*"
                                         r"vehicles_density"):
        envs.check_randomize(dataclasses.replace(HIGHWAY, randomize="max_episode_steps=choice(9)"))
    with pytest.raises(ValueError, match=r"pools drew options that change the observation or "
                                         r"action space"):
        envs.make_env(dataclasses.replace(HIGHWAY, randomize="observation_vehicles_count="
                                          "choice(3, 5)", scenario_pools=4), 8, 0)
    with pytest.raises(ValueError, match=r"scenario_pools=0 must be >= 1"):
        envs.EnvConfig(name="HighwayFast-v0", scenario_pools=0)


def test_a_run_on_pools_logs_the_return_per_bin_and_evaluates_held_out_ones(
        impala_classic_config, tmp_path):
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1,),
                                   num_actor_threads=1, num_envs=8, unroll_length=8,
                                   total_env_steps=8 * 8 * 10, checkpoint_keep=1)
    config.env.name = "HighwayFast-v0"
    config.env.randomize = "vehicles_count=choice(5, 40)"
    config.env.scenario_pools = 2
    config.env.episode_metrics = "crashed:max"
    summary = train.run(config).episode_summary
    assert summary["episode/count"] > 0
    games = [summary.get(f"episode/scenario_bins/vehicles_count/{b}/games", 0)
             for b in ("5", "40")]
    assert sum(games) == min(summary["episode/count"], 100)
    report = evaluate.main([str(tmp_path / "run"), "--episodes", "4", "--num_envs", "2",
                            "--scenario", "vehicles_count=choice(25)"])
    (held_out,) = report["scenarios"]
    assert held_out["episodes"] == 4
    assert held_out["episode_metrics"]["scenario/vehicles_count"] == 25
    with pytest.raises(ConfigError, match=r"cannot vary 'vehicles'"):
        config.env.randomize = "vehicles=choice(5, 40)"
        train.run(config)
