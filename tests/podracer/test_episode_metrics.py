"""env.episode_metrics: the parser, each reduction against hand-computed games, gymnasium's
masks, the rolling statistics (per scenario bin too) and their resume state, the exchange
between processes, the refusal of a field the env does not report, and HighwayFast-v0's crash
rate against a count made from EnvPool's own info."""
from __future__ import annotations

import math

import numpy as np
import pytest

from podracer import distributed
from podracer.episode_metrics import (Bins, EpisodeAccumulator, EpisodeMetric, parse,
                                      reported_fields, resolve)
from podracer.logging import EpisodeStats, MetricsLogger
from podracer.validation import ConfigError
from sebulba.actor_pools import EpisodeCounter
from sebulba.timestep import TimeStep
from tests.helpers import quiet_config, read_metrics


def test_parse_names_each_metric():
    assert parse("crashed:max, speed:mean,rewards.lane:sum") == (
        EpisodeMetric("crashed", "max", "crashed"), EpisodeMetric("speed", "mean", "speed"),
        EpisodeMetric("rewards.lane", "sum", "rewards/lane"))
    assert parse("") == ()
    # One field twice: each name says its reduction.
    assert [m.name for m in parse("speed:mean,speed:max")] == ["speed_mean", "speed_max"]


@pytest.mark.parametrize("text, match", [
    ("crashed", r"write field:reduction, e\.g\. crashed:max"),
    (":max", r"write field:reduction"),
    ("crashed:maxi", r"reduction 'maxi' is not one of max, mean, sum, last"),
    ("crashed:max,crashed:max", r"given twice"),
    ("count:sum", r"logged as episode/count, which the return statistics use"),
    ("rewards*:sum", r"a wildcard stands for a whole level at the end only"),
    ("a.*.b:sum", r"a wildcard stands for a whole level at the end only"),
])
def test_parse_refuses_malformed_text_naming_the_entry(text, match):
    with pytest.raises(ValueError, match=match):
        parse(text)


def test_a_wildcard_expands_to_every_field_under_its_prefix():
    reported = ("crashed", "rewards.lane", "rewards.goal", "speed")
    got = resolve(parse("rewards.*:sum,crashed:max,rewards.goal:sum"), reported, "env 'E'")
    assert got == (EpisodeMetric("rewards.lane", "sum", "rewards/lane"),
                   EpisodeMetric("rewards.goal", "sum", "rewards/goal"),
                   EpisodeMetric("crashed", "max", "crashed"))
    with pytest.raises(ValueError, match=r"^episode metric terms\.\*:sum: env 'E' reports no "
                                         r"field under 'terms' in its info; it reports: "
                                         r"crashed, rewards\.goal, rewards\.lane, speed\.$"):
        resolve(parse("terms.*:sum"), reported, "env 'E'")


def test_auto_takes_the_judged_fields_an_envpool_env_declares():
    from sebulba.envs import EnvConfig, EnvPoolEnv, episode_metrics_of
    found = {}
    for name in ("HighwayFast-v0", "Parking-v0", "CartPole-v1"):
        env = EnvPoolEnv(EnvConfig(name=name, num_threads=1), 1, 0)
        found[name] = episode_metrics_of(env, "auto", name)
        env.close()
    assert [m.field for m in found["HighwayFast-v0"]] == ["crashed", "speed"]
    assert [f"{m.field}:{m.reduction}" for m in found["Parking-v0"]] == [
        "crashed:max", "is_success:max", "speed:mean"]
    assert found["CartPole-v1"] == ()
    assert parse("auto") == ()


def _step(reward, over, info, terminated=None):
    over = np.asarray(over, bool)
    terminated = over if terminated is None else np.asarray(terminated, bool)
    return TimeStep(np.zeros((len(over), 1), np.float32), np.asarray(reward, np.float32),
                    terminated, over & ~terminated, over, info)


def test_each_reduction_over_games_with_resets_and_truncation():
    """Two envs with the one-step-late autoreset: env 0 plays a 3-step game (terminated), its
    reset step, then a 2-step game (truncated); env 1 one 6-step game. Reset steps (valid
    False) belong to no game: their info is not counted."""
    metrics = parse("x:max,x:mean,x:sum,x:last")
    counter, games = EpisodeCounter(2, metrics), []
    # rows: (x of env 0, x of env 1, over0, over1, trunc0)
    script = [(1.0, 5.0, 0, 0, 0), (4.0, -1.0, 0, 0, 0), (2.0, 0.0, 1, 0, 0),
              (99.0, 3.0, 0, 0, 0),  # env 0's reset step
              (-3.0, 2.0, 0, 0, 0), (-5.0, 1.0, 1, 1, 1)]
    prev_over = np.zeros(2, bool)
    for x0, x1, o0, o1, tr0 in script:
        over = np.array([o0, o1], bool)
        terminated = over & ~np.array([tr0, 0], bool)
        reward = np.where(prev_over, 0.0, 1.0)  # a reset step's reward is 0
        ts = _step(reward, over, {"x": np.array([x0, x1])}, terminated)
        counter.update(ts, ~prev_over, games)
        prev_over = over
    game0, game1, game2 = games[0], games[2], games[1]  # order of ending: env 0, env 0, env 1
    assert game0 == (3.0, 3, 4.0, 7.0 / 3, 7.0, 2.0)
    assert game1 == (6.0, 6, 5.0, 10.0 / 6, 10.0, 1.0)
    assert game2 == (2.0, 2, -3.0, -4.0, -8.0, -5.0)  # the reset step's 99 is not in it
    # Each counter starts a new game empty.
    ts = _step([0.0, 0.0], [1, 1], {"x": np.array([7.0, 8.0])})
    counter.update(ts, np.ones(2, bool), games)
    assert games[-2][2:] == (7.0, 7.0, 7.0, 7.0)


def test_gymnasium_masks_and_missing_fields():
    """A vector env's info holds a key for the envs that reported it ("_key" masks); a field
    no step of a game reported gives NaN, not 0."""
    acc = EpisodeAccumulator(parse("ok:last,speed:mean"), 3)
    acc.update({"ok": np.array([1, 0, 0]), "_ok": np.array([True, False, False]),
                "speed": np.array([2.0, 4.0, 6.0])}, np.ones(3, bool))
    acc.update({"speed": np.array([4.0, 0.0, 0.0])}, np.array([True, False, False]))
    assert acc.finish(0) == (1.0, 3.0)
    got = acc.finish(1)
    assert math.isnan(got[0]) and got[1] == 4.0
    nested = {"rewards": {"lane": np.array([0.5, 0.25]), "goal": np.array([0.0, 1.0])},
              "_rewards": np.array([True, True])}
    assert reported_fields(nested) == ("rewards.lane", "rewards.goal")
    acc = EpisodeAccumulator(parse("rewards.goal:sum"), 2)
    acc.update(nested, np.ones(2, bool))
    assert acc.finish(1) == (1.0,)


def test_stats_average_each_metric_over_the_window_and_resume():
    stats = EpisodeStats(window=3, metrics=("crashed", "speed"))
    stats.add([(1.0, 10, 1.0, 20.0), (2.0, 11, 0.0, float("nan")), (3.0, 12, 0.0, 10.0),
               (4.0, 13, 1.0, 30.0)])
    s = stats.summary()
    assert s["episode/crashed"] == pytest.approx(1 / 3)  # the last 3 games
    assert s["episode/speed"] == pytest.approx(20.0)  # the game that reported none is left out
    assert s["episode/return_mean"] == 3.0
    restored = EpisodeStats.restored(stats.state_dict())
    assert restored.summary() == s
    # A resumed run logs its own metrics: a new one starts empty, a dropped one is dropped.
    other = EpisodeStats(window=3, metrics=("speed", "success"))
    other.load_state_dict(stats.state_dict())
    assert other.summary()["episode/speed"] == pytest.approx(20.0)
    assert "episode/success" not in other.summary() and "episode/crashed" not in other.summary()


def test_games_and_their_metrics_cross_processes(monkeypatch):
    """The padded exchange of gather_episodes keeps each game's metrics beside its return."""
    monkeypatch.setattr(distributed.jax, "process_count", lambda: 2)
    monkeypatch.setattr(distributed, "allgather_host", lambda x: np.stack([x, 2 * x]))
    games = distributed.gather_episodes([(1.5, 3, 1.0, 0.25)], capacity=4, num_metrics=2)
    assert games == [(1.5, 3, 1.0, 0.25), (3.0, 6, 2.0, 0.5)]


def test_highway_crash_rate_equals_the_count_from_envpools_own_info():
    """HighwayFast-v0 under a random policy: the crash rate the actor's counter reports
    (crashed:max over each game) equals the rate counted from EnvPool's own info, stepped
    with the same seed and actions, over the same games."""
    import envpool

    from sebulba.envs import EnvConfig, EnvPoolEnv
    n, steps, seed = 4, 300, 3
    actions = np.random.default_rng(0).integers(0, 5, size=(steps, n))
    env = EnvPoolEnv(EnvConfig(name="HighwayFast-v0", num_threads=1), n, seed)
    counter, games = EpisodeCounter(n, parse("crashed:max,speed:mean")), []
    env.reset()
    prev_done = np.zeros(n, bool)
    for a in actions:
        ts = env.step(a)
        counter.update(ts, ~prev_done, games)
        prev_done = ts.terminated | ts.truncated
    env.close()
    raw = envpool.make("HighwayFast-v0", env_type="gymnasium", num_envs=n, batch_size=n,
                       seed=seed, num_threads=1)
    raw.reset()
    crashes = ends = 0
    for a in actions:
        _, _, terminated, truncated, info = raw.step(a)
        over = terminated | truncated
        ends += int(over.sum())
        crashes += int((info["crashed"] & over).sum())  # a crash ends the game
    raw.close()
    assert len(games) == ends > 20
    rate = float(np.mean([g[2] for g in games]))
    assert rate == crashes / ends
    assert 0.0 < rate < 1.0  # a random policy crashes in some games, not all
    assert all(15.0 <= g[3] <= 35.0 for g in games)  # mean speed (m/s) within the env's range


def test_a_run_logs_them_and_refuses_a_field_the_env_does_not_report(tmp_path, capsys):
    """A short HighwayFast-v0 run logs the crash rate and mean speed in training and in its
    greedy evaluation; scripts/evaluate.py reports the run's metrics, or others it is given,
    and refuses a field the env does not report (exit 2)."""
    from experiments import train
    from experiments.configs import ppo_classic
    from scripts import evaluate
    config = quiet_config(ppo_classic.get_config(), tmp_path / "run", **{
        "env.name": "HighwayFast-v0", "total_env_steps": 2048, "checkpoint_keep": 1,
        "eval_every_updates": 1, "eval_episodes": 4, "eval_num_envs": 2})
    assert config.env.episode_metrics == "auto"  # the default: crashed:max,speed:mean here
    result = train.run(config)
    rows = read_metrics(tmp_path / "run")
    train_rows = [r for r in rows if "episode/crashed" in r]
    assert train_rows and 0.0 <= train_rows[-1]["episode/crashed"] <= 1.0
    assert result.episode_summary["episode/speed"] > 0.0
    eval_rows = [r for r in rows if "eval/return_mean" in r]
    assert eval_rows and all(0.0 <= r["eval/crashed"] <= 1.0 and r["eval/speed"] > 0.0
                             for r in eval_rows)
    report = evaluate.main([str(tmp_path / "run"), "--episodes", "4", "--num_envs", "2",
                            "--output", str(tmp_path / "e.json")])
    crashed = report["metrics"]["crashed"]
    assert len(crashed) == 4 and set(crashed) <= {0.0, 1.0}
    assert report["episode_metrics"]["crashed"] == pytest.approx(np.mean(crashed))
    report = evaluate.main([str(tmp_path / "run"), "--episodes", "2", "--num_envs", "2",
                            "--episode_metrics", "elapsed_step:last",
                            "--output", str(tmp_path / "e2.json")])
    assert report["metrics"]["elapsed_step"] == [float(n) for n in report["lengths"]]
    with pytest.raises(SystemExit) as exit_:
        evaluate.main([str(tmp_path / "run"), "--episodes", "1", "--episode_metrics", "x:max"])
    assert exit_.value.code == 2
    config = quiet_config(ppo_classic.get_config(), tmp_path / "run2", **{
        "env.name": "HighwayFast-v0", "env.episode_metrics": "crashed:max,lanes:max"})
    with pytest.raises(ConfigError, match=(
            r"^env.episode_metrics='crashed:max,lanes:max': episode metric lanes:max: "
            r"env.name='HighwayFast-v0' does not report a field 'lanes' in its info; it "
            r"reports: crashed, elapsed_step, env_id, players.env_id, speed\.$")):
        train.run(config)


def test_stats_per_scenario_bin_against_a_hand_count(capsys):
    """Games grouped by a drawn field's bins: each bin's return, length and other metrics are
    the means of its own games in the window; an empty bin and a game that did not report the
    field are left out; the console line does not carry them."""
    grouping = Bins(edges=(1.0, 2.0), labels=("lo", "mid", "hi"))
    stats = EpisodeStats(window=5, metrics=("scenario/l", "crashed"),
                         bins={"scenario/l": grouping})
    stats.add([(9.0, 1, 2.5, 1.0),  # leaves the window
               (1.0, 10, 0.5, 1.0), (3.0, 30, 0.9, 0.0), (5.0, 50, 2.0, 1.0),
               (7.0, 70, 2.5, float("nan")), (100.0, 1, float("nan"), 1.0)])
    s = stats.summary()
    low, high = "episode/scenario_bins/l/lo/", "episode/scenario_bins/l/hi/"
    assert (s[low + "return_mean"], s[low + "length_mean"], s[low + "games"],
            s[low + "crashed"]) == (2.0, 20.0, 2.0, 0.5)
    assert (s[high + "return_mean"], s[high + "games"], s[high + "crashed"]) == (6.0, 2.0, 1.0)
    assert not any(k.startswith("episode/scenario_bins/l/mid/") for k in s)
    assert not any("scenario_bins/l/lo/scenario" in k for k in s)
    logger = MetricsLogger("", total_steps=10, enabled=False)
    logger._print(1, s, 1.0)
    assert "scenario_bins" not in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"bins of \['speed'\]: not among the metrics"):
        EpisodeStats(metrics=("crashed",), bins={"speed": grouping})
