"""Randomised scenarios on envs stepped on the host (env.randomize, sebulba/host_scenarios.py).

- The sampler: each distribution in range and of its law (a Kolmogorov-Smirnov test with a
  false-alarm rate of 1e-3 at these fixed seeds), integer fields drawing integers, one stream
  per env seed (reproducible, independent across seeds).
- gymnasium ids: each env draws per reset, keeps its scenario through the episode, reports it
  in its info; the physics uses it (a step equals gymnasium's own with that attribute set);
  CartPole's derived fields recomputed; the same draws in worker processes (env.workers).
- Registered envs: a maker that declares `scenario_fields` varies them (a training run logs the
  return per scenario bin); one that does not is refused, and so is a field it does not name.
- Refusals: fields a gymnasium env does not have, derived fields (EnvPool ids:
  test_scenario_pools.py).
"""
from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
import pytest
from scipy import stats

from experiments import train
from sebulba import envs, registry
from sebulba.host_scenarios import Sampler
from tests.fakes import python_envs
from tests.helpers import read_metrics

PENDULUM = envs.EnvConfig(name="gymnasium:Pendulum-v1", randomize="m=uniform(0.5, 2.0)",
                          episode_metrics="")


@pytest.mark.parametrize("text, law", [
    ("x=uniform(0.5, 2.0)", stats.uniform(0.5, 1.5)),
    ("x=loguniform(1, 100)", stats.loguniform(1, 100)),
    ("x=normal(10, 0.5)", stats.norm(10, 0.5)),
])
def test_sampler_draws_from_the_stated_law(text, law):
    sampler = Sampler(text, seed=3)
    values = np.array([sampler.draw({"x": 1.0})["x"] for _ in range(2000)])
    assert stats.kstest(values, law.cdf).pvalue > 1e-3


def test_sampler_integers_choices_and_streams():
    ints = Sampler("n=uniform(2, 4)", seed=0)
    drawn = [ints.draw({"n": 3})["n"] for _ in range(300)]
    assert all(isinstance(v, int) for v in drawn) and set(drawn) == {2, 3, 4}
    choice = Sampler("m=choice(0.5, 2.0)", seed=0)
    assert {choice.draw({"m": 1.0})["m"] for _ in range(100)} == {0.5, 2.0}
    a, b, again = (Sampler("x=uniform(0, 1)", seed=s) for s in (1, 2, 1))
    first = [a.draw({"x": 0.0})["x"] for _ in range(5)]
    assert first == [again.draw({"x": 0.0})["x"] for _ in range(5)]
    assert first != [b.draw({"x": 0.0})["x"] for _ in range(5)]


def _masses(cfg: envs.EnvConfig, num_envs: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """[steps, envs] the m each step's info reports, and the steps that began a game."""
    env = envs.make_env(cfg, num_envs, seed=7)
    try:
        env.reset()
        rng = np.random.default_rng(0)
        masses, starts = [], []
        for _ in range(steps):
            ts = env.step(rng.uniform(-2, 2, (num_envs, 1)).astype(np.float32))
            masses.append(np.asarray(ts.info["scenario"]["m"]))
            starts.append(np.asarray(ts.episode_over))
    finally:
        env.close()
    return np.array(masses), np.array(starts)


def test_gymnasium_envs_draw_per_env_and_reset_and_keep_it_through_the_game():
    masses, over = _masses(PENDULUM, 4, 420)  # Pendulum's games last 200 steps
    assert ((0.5 <= masses) & (masses < 2.0)).all()
    assert len(set(masses[0].tolist())) == 4  # envs draw their own
    assert over[199].all() and over[400].all()
    for lo, hi in ((0, 200), (201, 401)):  # a game keeps its scenario (the reset step after
        assert (masses[lo:hi] == masses[lo]).all()  # a game reports the next one's)
    assert (masses[0] != masses[201]).all()  # a new game draws anew


def test_a_step_is_gymnasiums_own_with_the_drawn_attribute():
    env = envs.make_env(PENDULUM, 2, seed=1)
    try:
        env.reset()
        inner = env._env.envs[1].unwrapped
        plain = gymnasium.make("Pendulum-v1").unwrapped
        plain.reset(seed=0)
        plain.state, plain.m = inner.state.copy(), inner.m
        action = np.array([[0.3], [1.7]], np.float32)
        ts = env.step(action)
        obs, reward, *_ = plain.step(action[1])
        assert ts.info["scenario"]["m"][1] == inner.m != 1.0
        np.testing.assert_allclose(ts.obs[1], obs, rtol=1e-6)
        assert ts.reward[1] == pytest.approx(reward, rel=1e-6)
    finally:
        env.close()


def test_cartpoles_derived_fields_follow_the_drawn_length():
    cfg = envs.EnvConfig(name="gymnasium:CartPole-v1", randomize="length=uniform(0.3, 0.9)")
    env = envs.make_env(cfg, 3, seed=0)
    try:
        env.reset()
        for sub in env._env.envs:
            inner = sub.unwrapped
            assert inner.length != 0.5
            assert inner.polemass_length == pytest.approx(inner.masspole * inner.length)
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"cannot vary 'total_mass'.*: force_mag, gravity, "
                                         r"length, masscart, masspole, tau"):
        envs.make_env(dataclasses.replace(cfg, randomize="total_mass=uniform(1, 2)"), 1, 0)


def test_workers_draw_the_scenarios_of_the_actors_own_process():
    in_process, _ = _masses(PENDULUM, 3, 210)
    in_workers, _ = _masses(dataclasses.replace(PENDULUM, workers=2), 3, 210)
    np.testing.assert_array_equal(in_process, in_workers)


def test_refusals_name_the_route_and_the_fields():
    with pytest.raises(ValueError, match=r"gymnasium Pendulum-v1 cannot vary 'length'.*: dt, g, "
                                         r"l, m, max_speed, max_torque"):
        envs.make_env(dataclasses.replace(PENDULUM, randomize="length=choice(1)"), 1, 0)
    with pytest.raises(ValueError, match=r"gymnasium Rover cannot vary 'mass'"):
        envs.make_env(envs.EnvConfig(name=python_envs.ENV_NAME, randomize="mass=choice(1)"),
                      2, 0)
    registry.register_env("Plain-test-v0", python_envs.make_rover_fixed, overwrite=True)
    try:
        with pytest.raises(ValueError, match=r"'Plain-test-v0' does not declare the fields it "
                                             r"can vary: give its batch a `scenario_fields`"):
            envs.make_env(envs.EnvConfig(name="Plain-test-v0", randomize="grip=choice(1)"), 2, 0)
    finally:
        registry.unregister_env("Plain-test-v0")


def test_a_registered_env_trains_on_its_scenarios_with_the_return_per_bin(
        impala_classic_config, tmp_path):
    """... and its periodic evaluation plays the held-out grip (eval_randomize)."""
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1,),
                                   num_actor_threads=1, num_envs=4, unroll_length=8,
                                   total_env_steps=4 * 8 * 12, checkpoint_keep=0,
                                   eval_every_updates=6, eval_episodes=4, eval_num_envs=2,
                                   eval_randomize="grip=choice(3.0)")
    config.env.name = python_envs.ENV_NAME
    config.env.randomize = "grip=choice(0.5, 2.0)"
    config.env.episode_metrics = "speed:mean"
    result = train.run(config)
    summary = result.episode_summary
    slow, fast = (f"episode/scenario_bins/grip/{b}/" for b in ("0.5", "2"))
    assert summary[slow + "games"] + summary[fast + "games"] == min(summary["episode/count"],
                                                                    100)
    assert summary[fast + "speed"] > 2 * summary[slow + "speed"]  # the env used the grip
    rows = read_metrics(tmp_path / "run")
    assert any("episode/scenario/grip" in r for r in rows)
    played = [r["eval/scenario/grip"] for r in rows if "eval/scenario/grip" in r]
    assert played and all(v == 3.0 for v in played)
