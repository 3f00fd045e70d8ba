"""Curricula (podracer/curriculum.py): schedules on randomised ranges, and the training progress
an env reads.

- The text: `A -> B over N env_steps|updates` parsed, described back, each malformed schedule
  refused naming what is wrong.
- The schedule's values at given steps (a linear move, then its end; the end with no progress).
- Draws follow it: a gymnax env's drawn EnvParams at given progress, an integer field.
- The runner hands the progress to an env that reads it (a registered env's own curriculum):
  the exact env steps and updates at each reset, from a resumed update on, and the summary of
  the games the host logged (mean return, count, metric means by name); a run's env reads its
  own logged games.
- A run: the drawn values move from the start value to the end one; a resume continues the
  schedule from the checkpoint; each member of a population follows it (Sebulba's routes:
  tests/sebulba/test_curriculum_host.py).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

from anakin import actor, envs, host_games
from experiments import train
from podracer import curriculum, scenarios
from podracer.curriculum import TrainingProgress
from podracer.episode_metrics import EpisodeMetric
from tests.helpers import read_metrics

SCHEDULE = "length=uniform(0.2, 0.3) -> uniform(0.8, 0.9) over 10 updates"


def test_parse_a_schedule_and_describe_it_back():
    (d,) = scenarios.parse("density=uniform(0.5, 1.0) -> uniform(0.5, 2.0) over 2e6 env_steps")
    assert d == scenarios.Draw("density", "uniform", (0.5, 1.0), end=(0.5, 2.0), over=2e6,
                               unit="env_steps")
    assert d.scheduled and d.describe() == ("density=uniform(0.5, 1) -> uniform(0.5, 2) over "
                                            "2000000 env_steps")
    assert scenarios.parse(d.describe()) == (d,)
    both = scenarios.parse("m=choice(1, 2) -> choice(1, 4) over 50 updates; g=normal(10, 1)")
    assert [x.field for x in scenarios.scheduled(both)] == ["m"]


@pytest.mark.parametrize("text, match", [
    ("l=uniform(0.2, 0.3) -> uniform(0.8, 0.9)", r"a schedule reads A -> B over N env_steps"),
    ("l=uniform(0.2, 0.3) -> normal(1, 1) over 5 updates", r"one kind with as many numbers"),
    ("l=choice(1, 2) -> choice(1, 2, 3) over 5 updates", r"one kind with as many numbers"),
    ("l=uniform(0.2, 0.3) -> uniform(0.8, 0.9) over 0 updates", r"over 0: .* a number > 0"),
    ("l=uniform(0.2, 0.3) -> uniform(0.8, 0.9) over ten updates", r"over ten: .* number > 0"),
    ("l=uniform(0.2, 0.3) -> uniform(0.8, 0.9) over 5 steps",
     r"unit must be one of env_steps, updates"),
    ("l=tests.fakes.scenario_fns:short_or_long -> uniform(0, 1) over 5 updates",
     r"a function of one's own cannot be scheduled"),
    ("l=uniform(0.2, 0.3) -> uniform(0.9, 0.8) over 5 updates", r"needs low < high"),
])
def test_a_malformed_schedule_is_refused_naming_it(text, match):
    with pytest.raises(ValueError, match=match):
        scenarios.parse(text)


@pytest.mark.parametrize("progress, expected", [
    (TrainingProgress(0, 0), (0.5, 1.0)),
    (TrainingProgress(500, 3), (0.5, 1.5)),
    (TrainingProgress(1000, 7), (0.5, 2.0)),
    (TrainingProgress(25_000, 9), (0.5, 2.0)),   # past its length: stays at its end
    (None, (0.5, 2.0)),                          # an evaluation: the target task
])
def test_the_schedules_values_at_given_steps(progress, expected):
    (d,) = scenarios.parse("d=uniform(0.5, 1.0) -> uniform(0.5, 2.0) over 1000 env_steps")
    assert np.asarray(d.args_at(progress)) == pytest.approx(expected)
    (u,) = scenarios.parse("d=uniform(0.5, 1.0) -> uniform(0.5, 2.0) over 10 updates")
    high = 2.0 if progress is None else 1.0 + min(progress.updates / 10, 1.0)
    assert np.asarray(u.args_at(progress)) == pytest.approx((0.5, high))
    assert curriculum.fraction(10, "updates", TrainingProgress(1e9, 4)) == pytest.approx(0.4)


@pytest.mark.parametrize("updates, low, high", [(0, 0.2, 0.3), (5, 0.5, 0.6), (10, 0.8, 0.9),
                                                (40, 0.8, 0.9), (None, 0.8, 0.9)])
def test_a_gymnax_env_draws_from_the_schedule_at_its_progress(updates, low, high):
    env = envs.make_env("gymnax:CartPole-v1", {}, SCHEDULE)
    assert env.reads_progress
    keys = jax.random.split(jax.random.key(0), 256)
    progress = None if updates is None else TrainingProgress(0.0, jnp.int32(updates))
    state = jax.vmap(lambda k: env.reset(k, progress))(keys)
    lengths = np.asarray(state.inner[1].length)
    assert ((low - 1e-6 <= lengths) & (lengths < high + 1e-6)).all()
    assert lengths.max() - lengths.min() > 0.8 * (high - low)  # the whole range, not a point
    # CartPole's derived fields follow the drawn length.
    np.testing.assert_allclose(state.inner[1].polemass_length,
                               state.inner[1].masspole * lengths, rtol=1e-6)


def test_an_integer_field_draws_integers_from_the_moving_bounds():
    (d,) = scenarios.parse("n=uniform(1, 3) -> uniform(5, 9) over 10 updates")
    keys = jax.random.split(jax.random.key(1), 400)
    n = jax.vmap(lambda k: scenarios.draw((d,), k, {"n": 3},
                                          TrainingProgress(0.0, jnp.int32(5)))["n"])(keys)
    assert n.dtype == jnp.int32 and set(np.asarray(n).tolist()) == {3, 4, 5, 6}


def test_the_games_summary_a_curriculum_reads():
    from podracer.logging import EpisodeStats
    stats = EpisodeStats(window=3, metrics=("crashed", "speed"))
    ret, games, means = stats.recent()
    assert np.isnan(ret) and games == 0 and list(means) == ["crashed", "speed"]
    nan = float("nan")
    stats.add([(1.0, 5, 1.0, nan), (2.0, 5, 0.0, nan), (3.0, 5, 0.0, nan), (6.0, 5, 1.0, nan)])
    ret, games, means = stats.recent()  # the last 3 games
    assert ret == pytest.approx(11 / 3) and games == 4
    assert means["crashed"] == pytest.approx(1 / 3) and np.isnan(means["speed"])
    np.testing.assert_allclose(actor.recent_row((ret, games, means), 2),
                               [11 / 3, 4, 1 / 3, nan], rtol=1e-6)


class Clock:
    """A registered env's own curriculum: it reads the progress at each reset (steps, updates,
    the logged games' mean return and count, a metric's mean by name) and reports it in every
    step's info; a game is 3 steps of reward 1 (then AutoReset's reset step)."""

    observation_space = spaces.Box(-1e6, 1e6, (1,), np.float32)
    action_space = spaces.Discrete(2)
    reads_progress = True

    def reset(self, key, progress):
        if progress is None:  # an evaluation: the env's own target task
            progress = TrainingProgress(-1.0, -1, metrics={"progress/updates": -1.0})
        seen = jnp.stack([jnp.asarray(x, jnp.float32) for x in (
            progress.env_steps, progress.updates, progress.return_mean, progress.games,
            progress.metrics["progress/updates"])])
        return (jnp.zeros((), jnp.int32), seen), jnp.zeros(1, jnp.float32)

    def transition(self, key, state, action):
        t, seen = state
        t = t + 1
        info = {"progress": dict(zip(("env_steps", "updates", "return_mean", "games",
                                      "updates_mean"), seen))}
        return (t, seen), t.astype(jnp.float32)[None], 1.0, t >= 3, False, info


CLOCK_METRICS = tuple(EpisodeMetric(f"progress.{n}", "last", f"progress/{n}") for n in
                      ("updates", "env_steps", "return_mean", "games", "updates_mean"))


def test_the_runner_hands_an_env_the_progress_it_is_promised():
    """From update 2 on (a resume), 100 env steps an update: a game begun at the last step of
    a rollout (its reset step) reads that rollout's progress; the logged games' summary is the
    one the host set before the call (a window mean return of 3.0 over 7 games, then 3.0 over
    9, the metric "progress/updates" at 2.5)."""
    import agents.ppo as ppo
    from tests.helpers import small_network
    env = envs.AutoReset(Clock())
    names = tuple(m.name for m in CLOCK_METRICS)
    agent = ppo.make_agent(small_network(env.action_space), ppo.PPOConfig(correction="none"),
                           num_updates=1)
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0), None).obs)
    state = agent.init(jax.random.key(1), example)
    with pytest.raises(ValueError, match=r"steps_per_update=0: the env reads the training "
                                         r"progress"):
        actor.init_runner(agent, env, jax.random.key(2), 2, 5, start_update=2,
                          metric_names=names)
    runner = actor.init_runner(agent, env, jax.random.key(2), 2, 5, start_update=2,
                               steps_per_update=100, metric_names=names)
    run = jax.jit(lambda s, r: actor.rollout(agent, env, agent.actor_params(s), r, 8,
                                             CLOCK_METRICS, steps_per_update=100))
    games = []
    for i in range(3):
        means = {n: 2.5 if n == "progress/updates" else 0.0 for n in names}
        row = actor.recent_row((3.0, 7 + 2 * i, means), len(names))
        runner = runner._replace(recent=jnp.broadcast_to(row, runner.recent.shape))
        runner, _, eps = run(state, runner)
        games.append(sorted(set(tuple(-9.0 if np.isnan(v) else v for v in g[2:])
                                for g in host_games.local_episodes(eps)[0])))
    nan = -9.0  # what no game had logged yet (NaN), comparable
    # Steps 1-3 a game, 4 its reset step, 5-7 a game, 8 a reset step: 2 games per rollout.
    # The first game was drawn by init_runner (no games logged yet).
    expected = [[(2.0, 200.0, nan, 0.0, nan), (2.0, 200.0, 3.0, 7.0, 2.5)],
                [(2.0, 200.0, 3.0, 7.0, 2.5), (3.0, 300.0, 3.0, 9.0, 2.5)],
                [(3.0, 300.0, 3.0, 9.0, 2.5), (4.0, 400.0, 3.0, 11.0, 2.5)]]
    np.testing.assert_array_equal(np.array(games), np.array(expected))
    assert np.asarray(runner.updates).tolist() == [5, 5]


def test_a_run_hands_its_env_the_games_it_logged(ppo_gymnax_config):
    """A registered JAX env reads the run's own window: every game after the first call reads
    a mean return of 3.0 (each game scores 3) and a growing count of games."""
    envs.register_env("Clock-test-v0", lambda options: Clock(), overwrite=True)
    try:
        config = ppo_gymnax_config(num_envs=8, unroll_length=16, total_env_steps=8 * 16 * 4,
                                   checkpoint_keep=0, **{"agent.num_minibatches": 2})
        config.env.name = "Clock-test-v0"
        config.env.episode_metrics = ",".join(f"{m.field}:last" for m in CLOCK_METRICS)
        result = train.run(config)
    finally:
        envs.ENVS.unregister("Clock-test-v0")
    summary = result.episode_summary
    assert summary["episode/progress/return_mean"] == pytest.approx(3.0)  # NaN: not counted
    assert 0 < summary["episode/progress/games"] < summary["episode/count"]
    assert summary["episode/progress/env_steps"] == pytest.approx(
        128 * summary["episode/progress/updates"])


def _scheduled_config(make, **overrides):
    config = make(num_envs=8, unroll_length=32, **{"agent.num_minibatches": 2}, **overrides)
    config.env.randomize = "length=choice(0.3) -> choice(0.9) over 1 updates"
    config.env.episode_metrics = "scenario.length:last"
    return config


def test_a_run_follows_the_schedule_and_a_resume_continues_it(ppo_gymnax_config, tmp_path):
    """Games of update 0 play length 0.3, every later one 0.9. A resume after update 1 plays
    0.9 from its first game on (the schedule restarted would play 0.3 again): the window's
    games at 0.3 stay those of the first run."""
    first = train.run(_scheduled_config(ppo_gymnax_config, total_env_steps=256,
                                        checkpoint_every_updates=1))
    assert first.updates == 1
    train.run(_scheduled_config(ppo_gymnax_config, total_env_steps=3 * 256,
                                resume=str(tmp_path / "run")))
    rows = [r for r in read_metrics(tmp_path / "run") if "episode/scenario/length" in r]
    assert [r["step"] for r in rows] == [256, 512, 768]
    early, late = "episode/scenario_bins/length/0.3/games", "episode/scenario_bins/length/0.9/games"
    assert rows[0][early] > 0 and rows[0].get(late, 0) == 0
    assert rows[-1][early] == rows[0][early] and rows[-1][late] > 0
    assert rows[0]["episode/scenario/length"] == pytest.approx(0.3)
    assert rows[-1]["episode/scenario/length"] > rows[0]["episode/scenario/length"]


def test_each_member_of_a_population_follows_the_schedule(ppo_gymnax_config):
    config = ppo_gymnax_config(num_seeds=2, num_envs=8, unroll_length=16,
                               total_env_steps=2 * 8 * 16 * 12, checkpoint_keep=0)
    config.env.randomize = "length=uniform(0.2, 0.3) -> uniform(0.8, 0.9) over 2 updates"
    config.env.episode_metrics = "scenario.length:last"
    result = train.run(config)
    for member in result.members:
        bins = {k.split("/")[-2]: v for k, v in member["episode_summary"].items()
                if k.startswith("episode/scenario_bins/length/") and k.endswith("/games")}
        # Updates 0 and 1 draw below 0.8, the ten after them in [0.8, 0.9): most of the
        # window's games are in the top bin (0.2-0.9 cut in four).
        assert bins.get("0.725-0.9", 0) > sum(bins.values()) / 2, bins
    means = [m["episode_summary"]["episode/scenario/length"] for m in result.members]
    assert means[0] != means[1]  # each member draws its own
