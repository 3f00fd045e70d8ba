"""Curricula on Sebulba's host routes (podracer/curriculum.py): the training progress reaches
every env that reads it.

- The sampler draws from a schedule at a given progress (its end with none).
- gymnasium ids, in the actor's process and in worker processes (env.workers), and gymnax
  envs stepped on the host: `set_progress` moves the draws of the resets that follow.
- A registered env's own curriculum: a run's actors hand it the progress of the parameters
  acting (env steps = updates x one update's steps) before its first reset, from the
  resumed update on after a resume.
- A run follows a schedule: the drawn pole lengths move from the start value to the end one.
- Refusals: a schedule on an EnvPool id (a pool fixes its options when built), a registered
  batch that does not read the progress.
"""
from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from experiments import train
from podracer.curriculum import TrainingProgress
from sebulba import adapters, envs, registry
from sebulba.host_scenarios import Sampler
from tests.fakes import python_envs
from tests.helpers import read_metrics

LENGTHS = "length=uniform(0.2, 0.3) -> uniform(0.8, 0.9) over 10 updates"


@pytest.mark.parametrize("progress, low, high", [
    (TrainingProgress(0, 0), 0.2, 0.3), (TrainingProgress(0, 5), 0.5, 0.6),
    (TrainingProgress(0, 99), 0.8, 0.9), (None, 0.8, 0.9)])
def test_the_sampler_draws_from_the_schedule_at_its_progress(progress, low, high):
    sampler = Sampler(LENGTHS, seed=0)
    assert sampler.scheduled
    values = np.array([sampler.draw({"length": 0.5}, progress)["length"] for _ in range(300)])
    assert ((low - 1e-9 <= values) & (values < high + 1e-9)).all()
    assert values.max() - values.min() > 0.8 * (high - low)


def _lengths_after_reset(cfg, progress, num_envs=4):
    """The pole lengths each env drew at its first reset, with `progress` handed first."""
    env = envs.make_env(cfg, num_envs, seed=0)
    try:
        assert env.reads_progress
        if progress is not None:
            env.set_progress(progress)
        env.reset()
        return np.asarray(env.step(np.zeros(num_envs, np.int64)).info["scenario"]["length"])
    finally:
        env.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_gymnasium_envs_draw_at_the_progress_they_are_handed(workers):
    cfg = envs.EnvConfig(name="gymnasium:CartPole-v1", randomize=LENGTHS, workers=workers)
    for progress, low, high in ((TrainingProgress(0, 0), 0.2, 0.3),
                                (TrainingProgress(640, 5), 0.5, 0.6), (None, 0.8, 0.9)):
        lengths = _lengths_after_reset(cfg, progress)
        assert ((low <= lengths) & (lengths < high)).all(), (progress, lengths)


def test_a_gymnax_env_stepped_on_the_host_draws_at_the_progress_it_is_handed():
    from experiments.wiring.drivers import sebulba as sebulba_driver
    make = sebulba_driver.host_envs(envs.EnvConfig(name="gymnax:CartPole-v1",
                                                   randomize=LENGTHS))
    for progress, low, high in ((TrainingProgress(0, 0), 0.2, 0.3),
                                (TrainingProgress(0, 5), 0.5, 0.6), (None, 0.8, 0.9)):
        env = make(4, 0)
        assert env.reads_progress
        if progress is not None:
            env.set_progress(progress)
        env.reset()
        lengths = np.asarray(env.step(np.zeros(4, np.int32)).info["scenario"]["length"])
        assert ((low - 1e-6 <= lengths) & (lengths < high + 1e-6)).all(), (progress, lengths)


SEEN: list[tuple] = []  # the progress each Level reset read, in order


class Level(gym.Env):
    """A simulator running its own curriculum: it reads the progress at each reset (what a
    level-up rule would read: steps, updates, the logged games' mean return and count) and
    records it; a game is 3 steps of reward 1."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)
    reads_progress = True

    def __init__(self) -> None:
        self.progress, self.t = None, 0

    def set_progress(self, progress: TrainingProgress) -> None:
        self.progress = progress

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        p = self.progress
        SEEN.append((-1.0, -1.0, -1.0, -1) if p is None else
                    (float(p.env_steps), float(p.updates), float(p.return_mean), int(p.games)))
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 3, False, {}


def make_levels(num_envs: int, seed: int, env_config) -> adapters.GymnasiumVectorEnv:
    return adapters.gymnasium_env(Level, num_envs, seed)


def _level_config(make, **overrides):
    config = make(actor_device_ids=(0,), learner_device_ids=(1,), num_actor_threads=1,
                  num_envs=4, unroll_length=8, checkpoint_keep=2, **overrides)
    config.env.name = "Levels-test-v0"
    config.env.episode_metrics = ""
    return config


def _training_resets(seen: list[tuple]) -> list[tuple]:
    """The resets of the run's actors: after those of the envs built to read the spaces (no
    progress handed), every one with a progress."""
    first = next(i for i, s in enumerate(seen) if s[1] >= 0)
    assert all(s[1] == -1 for s in seen[:first]) and all(s[1] >= 0 for s in seen[first:])
    return seen[first:]


def test_a_registered_env_reads_the_progress_of_the_parameters_acting(
        impala_classic_config, tmp_path):
    registry.register_env("Levels-test-v0", make_levels, overwrite=True)
    try:
        SEEN.clear()
        first = train.run(_level_config(impala_classic_config, total_env_steps=4 * 8 * 6,
                                        checkpoint_every_updates=3))
        steps = first.env_steps // first.updates  # one update's env steps
        seen = _training_resets(SEEN)
        assert seen[0][:2] == (0.0, 0.0) and seen[0][3] == 0  # before any game
        assert all(s == u * steps for s, u, _, _ in seen), seen
        assert max(u for _, u, _, _ in seen) >= 3  # it moved with the learner
        logged = [(u, ret, games) for _, u, ret, games in seen if games > 0]
        assert logged and all(ret == 3.0 for _, ret, _ in logged)  # every game scores 3
        assert [g for _, _, g in sorted(logged)] == sorted(g for _, _, g in logged)
        SEEN.clear()
        train.run(_level_config(impala_classic_config, total_env_steps=4 * 8 * 9,
                                resume=str(tmp_path / "run")))
        resumed = _training_resets(SEEN)
        assert resumed[0][:2] == (6.0 * steps, 6.0)  # a resume: the checkpoint's update,
        assert resumed[0][2] == 3.0 and resumed[0][3] > 0  # and its logged games
        assert all(s == u * steps and u >= 6 for s, u, _, _ in resumed), resumed
    finally:
        registry.unregister_env("Levels-test-v0")


def test_a_run_follows_the_schedule(impala_classic_config, tmp_path):
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1,),
                                   num_actor_threads=1, num_envs=8, unroll_length=32,
                                   total_env_steps=8 * 32 * 6, checkpoint_keep=0)
    config.env.name = "gymnasium:CartPole-v1"
    config.env.randomize = "length=choice(0.3) -> choice(0.9) over 1 updates"
    config.env.episode_metrics = "scenario.length:last"
    train.run(config)
    rows = [r for r in read_metrics(tmp_path / "run") if "episode/scenario/length" in r]
    early, late = ("episode/scenario_bins/length/0.3/games",
                   "episode/scenario_bins/length/0.9/games")
    assert rows[0][early] > 0 and rows[0].get(late, 0) == 0  # update 0 plays 0.3
    assert rows[-1][late] > 0  # later updates 0.9
    assert rows[-1]["episode/scenario/length"] > rows[0]["episode/scenario/length"]


def test_refusals_name_the_schedule_and_what_is_missing():
    with pytest.raises(ValueError, match=r"EnvPool HighwayFast-v0: vehicles_density=uniform"
                                         r"\(0.5, 1\) -> uniform\(0.5, 2\) over 10 updates is "
                                         r"a schedule, but a pool fixes its options"):
        envs.check_randomize(envs.EnvConfig(
            name="HighwayFast-v0",
            randomize="vehicles_density=uniform(0.5, 1) -> uniform(0.5, 2) over 10 updates"))

    def make_plain(num_envs, seed, env_config):  # declares its fields, reads no progress
        batch = python_envs.make_rover(num_envs, seed, dataclasses.replace(env_config,
                                                                           randomize=""))
        batch.scenario_fields = ("grip",)
        return batch

    registry.register_env("Plain-curriculum-test-v0", make_plain, overwrite=True)
    try:
        with pytest.raises(ValueError, match=r"schedules grip, but the env maker registered "
                                             r"as 'Plain-curriculum-test-v0''s batch does not "
                                             r"read the training progress"):
            envs.make_env(envs.EnvConfig(
                name="Plain-curriculum-test-v0",
                randomize="grip=choice(0.5) -> choice(2) over 5 updates"), 2, 0)
    finally:
        registry.unregister_env("Plain-curriculum-test-v0")
    # The same field through host_scenarios.randomized reads it (the Rover maker).
    rover = envs.make_env(envs.EnvConfig(
        name=python_envs.ENV_NAME, randomize="grip=choice(0.5) -> choice(2) over 5 updates"),
        2, 0)
    assert rover.reads_progress
    rover.close()
