"""scripts/plot.py's seed aggregates (IQM, stratified-bootstrap intervals, performance profile,
normalisation, the final-score table) on synthetic run dirs with known per-seed scores."""
import json

import matplotlib.image
import numpy as np
import pytest
from scipy import stats

from scripts import plot
from scripts.analysis import rundir, scores
from tests.fakes.run_dirs import METRIC
from tests.fakes.run_dirs import write_run as _write_run

REPS = 300  # enough for a 95% interval to be stable to ~0.1 here, and quick


def _parse_table(text: str) -> dict[tuple[str, str], dict]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
            for line in lines[2:]]
    return {(r["setting"], r["env"]): r for r in rows}


def _ci(cell: str) -> tuple[float, float]:
    low, high = (float(v) for v in cell.strip("[]").split(","))
    return low, high


# Eight seeds: the IQM is the mean of the middle four (2, 3, 4, 5) = 3.5, which the outlier
# (100) does not move; the mean (15.125) it does.
FINALS = [5.0, 0.0, 100.0, 3.0, 1.0, 6.0, 2.0, 4.0]


def test_iqm_table_curve_and_single_seed(tmp_path, capsys):
    for s, final in enumerate(FINALS):
        _write_run(tmp_path / "runs" / f"a-s{s}", s, final)
    _write_run(tmp_path / "runs" / "b-s0", 0, 7.0, lr=5e-4)  # a setting with one seed
    png = tmp_path / "iqm.png"
    plot.main([str(tmp_path / "runs"), "--aggregate", "iqm", "--output", str(png),
               "--reps", str(REPS)])
    out = capsys.readouterr().out

    table = _parse_table(out)
    a = table[("agent.learning_rate=0.001", "Pong-v5")]
    assert a["seeds"] == "8"
    assert float(a["IQM"]) == pytest.approx(3.5)
    assert float(a["median"]) == pytest.approx(3.5)
    assert float(a["mean"]) == pytest.approx(np.mean(FINALS), abs=0.01)
    assert (float(a["min"]), float(a["max"])) == (0.0, 100.0)
    low, high = _ci(a["95% CI (stratified bootstrap)"])
    assert 0.0 <= low < 3.5 < high < 100.0  # the interval holds the estimate and has width
    # ... and is rliable's own stratified-bootstrap interval of aggregate_iqm (same draws:
    # its bootstrap takes NumPy's global RNG, which plot.py seeds with --bootstrap_seed 0).
    from rliable import library, metrics
    np.random.seed(0)
    _, ci = library.get_interval_estimates(
        {"x": np.array(FINALS)[:, None]}, lambda s: np.array([metrics.aggregate_iqm(s)]),
        reps=REPS)
    assert (low, high) == pytest.approx((ci["x"][0, 0], ci["x"][1, 0]), abs=0.006)

    b = table[("agent.learning_rate=0.0005", "Pong-v5")]
    assert b["seeds"] == "1" and float(b["IQM"]) == 7.0
    assert b["95% CI (stratified bootstrap)"] == "-"
    assert "agent.learning_rate=0.0005 on Pong-v5: 1 seed, so no confidence interval" in out
    assert "1 seed; drawn as that run, no confidence band" in out

    image = matplotlib.image.imread(str(png))
    assert image.shape[0] > 200 and image.shape[1] > 400 and image.std() > 0

    # The curve: at every step each seed is final * step / 1000, so the IQM is 3.5 * step / 1000.
    groups = plot.group_runs(rundir.find_runs([str(tmp_path / "runs")]))
    curves = [rundir.load_curve(r, METRIC) for r in groups[("agent.learning_rate=0.001",
                                                           "Pong-v5")]]
    grid, mid, low, high = scores.iqm_band(curves, "step", reps=REPS, points=21)
    assert grid[0] == 0 and grid[-1] == 1000
    assert mid == pytest.approx(3.5 * grid / 1000)
    assert np.all(low <= mid + 1e-9) and np.all(mid <= high + 1e-9)
    # Whole seeds are drawn, with the same RNG seed: at the end, where the curve values are the
    # final scores, the band is the table's interval.
    assert (low[-1], high[-1]) == pytest.approx(_ci(a["95% CI (stratified bootstrap)"]),
                                                abs=0.006)
    one = scores.iqm_band(curves[:1], "step")
    assert one[2] is None and np.array_equal(one[1], curves[0]["value"])


def test_iqm_grid_ends_with_the_shortest_seed(tmp_path, capsys):
    for s, (final, steps) in enumerate([(1.0, 1000), (2.0, 1000), (3.0, 600)]):
        _write_run(tmp_path / f"r{s}", s, final, steps=steps, summary=False)
    curves = [rundir.load_curve(str(tmp_path / f"r{s}"), METRIC) for s in range(3)]
    grid, mid, _, _ = scores.iqm_band(curves, "step", reps=REPS)
    assert grid[-1] == 600  # no seed is extrapolated past its last point
    # 3 seeds: nothing trimmed, the IQM is the mean of 0.6, 1.2 and 3.0 at step 600.
    assert mid[-1] == pytest.approx(np.mean([0.6, 1.2, 3.0]))
    plot.main([str(tmp_path), "--aggregate", "iqm", "--output", str(tmp_path / "x.png"),
               "--reps", str(REPS), "--x", "step"])
    out = capsys.readouterr().out
    assert "IQM curve ends at step 600, where its shortest seed ends (longest: 1,000)" in out
    assert "3 seeds; below 4 the IQM trims nothing" in out
    # No summary.json (a run still going): its final score is its last logged point.
    row = _parse_table(out)[("all runs", "Pong-v5")]
    assert float(row["max"]) == pytest.approx(3.0) and float(row["min"]) == pytest.approx(1.0)


def test_normalised_profile_and_all_envs_row(tmp_path, capsys):
    # Two settings (from a sweep's labels, env in the grid) x Pong and Breakout x 4 seeds.
    # Normalised with the Nature DQN table: Pong (-20.7 random, 9.3 human), Breakout (1.7, 31.8).
    pong = {1e-3: [-20.7, -5.7, 9.3, 24.3], 5e-4: [-20.7, -20.7, -20.7, -5.7]}  # 0, .5, 1, 1.5
    breakout = {1e-3: [1.7, 16.75, 31.8, 31.8], 5e-4: [1.7, 1.7, 16.75, 16.75]}  # 0, .5, 1, 1
    for lr in (1e-3, 5e-4):
        for env, finals in (("Pong-v5", pong[lr]), ("Breakout-v5", breakout[lr])):
            for s, final in enumerate(finals):
                overrides = {"agent.learning_rate": str(lr), "env.name": env}
                _write_run(tmp_path / f"{env}-{lr}-s{s}", s, final, env=env, lr=lr, sweep={
                    "label": " ".join(f"{k}={v}" for k, v in overrides.items()),
                    "overrides": overrides, "seed": s})
    png = tmp_path / "profile.png"
    plot.main([str(tmp_path), "--output", str(tmp_path / "c.png"), "--profile", str(png),
               "--normalize", "atari_nature", "--reps", str(REPS)])
    out = capsys.readouterr().out
    table = _parse_table(out)
    assert set(table) == {(f"agent.learning_rate={lr}", env) for lr in ("0.001", "0.0005")
                          for env in ("Pong-v5", "Breakout-v5", scores.ALL_ENVS)}
    iqm = lambda key: float(table[key]["IQM"])  # noqa: E731
    assert iqm(("agent.learning_rate=0.001", "Pong-v5")) == pytest.approx(0.75)  # (.5 + 1) / 2
    assert iqm(("agent.learning_rate=0.0005", "Breakout-v5")) == pytest.approx(0.25)
    # All envs: the IQM of the 8 normalised scores of a setting (runs x games, as rliable).
    normalised = np.array([0, .5, 1, 1.5, 0, .5, 1, 1])
    assert iqm(("agent.learning_rate=0.001", scores.ALL_ENVS)) == pytest.approx(
        stats.trim_mean(normalised, 0.25), abs=0.01)
    assert "normalised (atari_nature: 0 random, 1 reference)" in out
    image = matplotlib.image.imread(str(png))
    assert image.shape[0] > 200 and image.std() > 0

    # The profile itself: the fraction of a setting's runs (all games) scoring above tau.
    finals = {(f"lr{lr}", env): scores.normalize(np.array(v[lr]), env, scores.NORMALIZE_TABLES[
        "atari_nature"]) for lr in (1e-3, 5e-4) for env, v in (("Pong-v5", pong),
                                                               ("Breakout-v5", breakout))}
    taus = np.array([-0.1, 0.25, 0.75, 1.25])
    profiles, cis = scores.performance_profile(finals, taus, reps=REPS)
    assert profiles["lr0.001"] == pytest.approx([1, 6 / 8, 4 / 8, 1 / 8])
    assert profiles["lr0.0005"] == pytest.approx([1, 3 / 8, 0, 0])
    assert np.all(cis["lr0.001"][0] <= profiles["lr0.001"] + 1e-9)
    assert np.all(profiles["lr0.001"] <= cis["lr0.001"][1] + 1e-9)
    # Envs with different numbers of runs: each env's fraction, averaged over envs.
    finals[("lr0.001", "Pong-v5")] = finals[("lr0.001", "Pong-v5")][:2]  # 0, .5
    profiles, _ = scores.performance_profile(finals, taus, reps=REPS)
    assert profiles["lr0.001"] == pytest.approx([1, (1 / 2 + 3 / 4) / 2, (0 + 2 / 4) / 2, 0])


def test_normalization_tables_and_errors(tmp_path):
    nature = scores.NORMALIZE_TABLES["atari_nature"]
    for env in ("Pong-v5", "ALE/Pong-v5", "PongNoFrameskip-v4"):
        assert scores.normalize(np.array([-20.7, 9.3]), env, nature) == pytest.approx([0, 1])
    with pytest.raises(ValueError, match=r"env 'Seaquest-v5' \(game 'Seaquest'\).*Breakout"):
        scores.normalize(np.array([1.0]), "Seaquest-v5", nature)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"HalfCheetah-v4": {"random": -280.0, "reference": 4720.0}}))
    table = scores.load_normalization(str(path))
    assert scores.normalize(np.array([2220.0]), "HalfCheetah-v4", table) == pytest.approx([0.5])
    path.write_text(json.dumps({"Pong": [-20.7, 9.3]}))
    with pytest.raises(ValueError, match=r"entry 'Pong'.*\"random\""):
        scores.load_normalization(str(path))
    with pytest.raises(ValueError, match="neither a built-in table"):
        scores.load_normalization("atari_human")


def test_only_one_seed_everywhere_is_noted_not_an_error(tmp_path, capsys):
    _write_run(tmp_path / "r", 0, 12.0)
    plot.main([str(tmp_path), "--aggregate", "iqm", "--output", str(tmp_path / "c.png"),
               "--profile", str(tmp_path / "p.png"), "--reps", str(REPS)])
    out = capsys.readouterr().out
    assert "1 seed, so no confidence interval" in out
    assert (tmp_path / "c.png").exists() and (tmp_path / "p.png").exists()


def test_table_at_steps_and_runs_not_there_yet(tmp_path, capsys):
    """--at: the score at given agent steps (the last point at or before each), a run that has
    not reached a step left out of that step's table with a note."""
    for s, final in enumerate(FINALS):
        _write_run(tmp_path / "runs" / f"a-s{s}", s, final, steps=1000, points=11)
    _write_run(tmp_path / "runs" / "a-s8", 8, 50.0, steps=400, points=5, summary=False)
    plot.main([str(tmp_path / "runs"), "--at", "450,1000", "--output",
               str(tmp_path / "c.png"), "--reps", str(REPS)])
    out, err = capsys.readouterr()
    first, second = out.split("at step 1,000,")
    (at_450,) = _parse_table(first.split("at step 450,")[1]).values()  # one setting, one env
    (at_1000,) = _parse_table(second).values()
    # At 450 the last logged point is step 400 (points every 100): final * 0.4 for the eight,
    # and 50.0 for the ninth, which ends at step 400: its next point (every 100) would be past
    # 450, so it is there (as a 10M-step run ending at 9,994,240 is at 10M).
    assert at_450["seeds"] == "9"
    assert float(at_450["max"]) == pytest.approx(50.0)
    assert float(at_450["min"]) == pytest.approx(0.0)
    assert float(at_450["median"]) == pytest.approx(np.median([f * 0.4 for f in FINALS]
                                                              + [50.0]))
    # At 1000 the ninth has not got there: left out, named.
    assert at_1000["seeds"] == "8" and float(at_1000["IQM"]) == pytest.approx(3.5)
    assert "a-s8 has no 'episode/return_mean' at step 1,000 (not there yet)" in err
    with pytest.raises(SystemExit):
        plot.main([str(tmp_path / "runs"), "--at", "1M"])
    assert "--at '1M'" in capsys.readouterr().err


def test_the_title_covers_no_panel_of_a_tall_figure(tmp_path, figures):
    """Five envs, each with references whose long labels put the legend under its row (the
    MinAtar figure): the figure title stays above the first row's panels."""
    envs = ("Asterix-v5", "Breakout-v5", "Freeway-v5", "Pong-v5", "Seaquest-v5")
    refs = "label,env,step,value\n" + "".join(
        f"a reference label long enough to sit under the axes {i},{env},{step},{step / 1000}\n"
        for i in range(6) for env in envs for step in (0, 2000))
    (tmp_path / "refs.csv").write_text(refs)
    for env in envs:
        for seed in (0, 1):
            _write_run(tmp_path / "runs" / f"{env}-s{seed}", seed=seed, final=1.0, env=env)
    plot.main([str(tmp_path / "runs"), "--aggregate", "iqm", "--reps", "100",
               "--reference", str(tmp_path / "refs.csv"), "--output", str(tmp_path / "iqm.png")])
    fig = figures[-1]
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    assert len(fig.axes) == 10
    covered = [ax.get_ylabel().split("\n")[-1] for ax in fig.axes
               if title.overlaps(ax.get_tightbbox(renderer))]
    assert not covered, (title, covered)  # plain tight_layout: the two Asterix panels
