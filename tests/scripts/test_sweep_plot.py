"""scripts/sweep.py on a 2-setting x 2-seed CartPole micro sweep (run, skip, resume, table),
scripts/plot.py on its runs, and the small pieces (grid syntax, seed statistics, benchmark CSV).

The sweep launches real child processes (the impala_classic `:debug` variant, 2,048 steps):
about 30-40 s on 2 quiet CPU cores.
"""
import contextlib
import csv
import json
import io
import os
import shutil
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from scipy import stats

from benchmarks import throughput
from benchmarks.harness import report
from scripts import plot, sweep
from scripts.analysis import rundir

ROOT = Path(__file__).resolve().parents[2]


def _sweep_args(out):
    return ["--experiment", str(ROOT / "experiments" / "impala_atari.py"),
            "--config", str(ROOT / "experiments" / "configs" / "impala_classic.py") + ":debug",
            "--grid", "agent.learning_rate=1e-3,5e-4", "--seeds", "0,1", "--parallel", "2",
            "--out", str(out)]


def _parse_table(text: str) -> dict[str, dict]:
    """The printed markdown table, as {setting: {column: cell}}."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert set(lines[1].strip("|").replace("|", "").replace(":", "")) == {"-"}, lines[1]
    rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
            for line in lines[2:]]
    return {r["setting"]: r for r in rows}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The micro sweep, run once; returns (out dir, its printed output)."""
    out = tmp_path_factory.mktemp("sweep") / "lr"
    printed = io.StringIO()  # capsys is function-scoped
    with contextlib.redirect_stdout(printed):
        sweep.main(_sweep_args(out))
    return out, printed.getvalue()


def test_sweep_runs_every_setting_and_seed_and_prints_the_table(swept):
    out, text = swept
    assert "launched 4, skipped 0 finished, failed 0" in text, text
    runs = sorted(p.parent for p in out.glob("*/seed*/summary.json"))
    assert [p.relative_to(out).as_posix() for p in runs] == [
        "agent.learning_rate=1e-3/seed0", "agent.learning_rate=1e-3/seed1",
        "agent.learning_rate=5e-4/seed0", "agent.learning_rate=5e-4/seed1"]
    for run in runs:  # each in its own dir with its config, its setting and its log
        config = rundir.read_json(str(run / "config.json"))
        meta = rundir.read_json(str(run / "sweep_run.json"))
        assert config["seed"] == meta["seed"] == int(run.name[-1])
        assert config["agent"]["learning_rate"] == float(meta["overrides"]["agent.learning_rate"])
        assert config["console_every_s"] >= 60  # children keep their logs short
        assert "run dir:" in (run / "train.log").read_text()

    table = _parse_table(text)
    assert list(table) == ["agent.learning_rate=1e-3", "agent.learning_rate=5e-4"]
    for setting, row in table.items():
        finals = [rundir.read_json(str(out / setting / f"seed{s}" / "summary.json"))
                  ["episode/return_mean"] for s in (0, 1)]
        assert row["seeds"] == "2/2"
        assert float(row["episode/return_mean mean"]) == pytest.approx(np.mean(finals), abs=0.01)
        low, high = (float(v) for v in row["95% CI (t)"].strip("[]").split(","))
        assert low <= float(row["episode/return_mean mean"]) <= high
        assert row["IQM"] == "-"  # 2 seeds: too few for an IQM
        assert [float(v) for v in row["per seed"].split(",")] == pytest.approx(finals, abs=0.01)
    with open(out / "results.csv") as f:
        assert [r["setting"] for r in csv.DictReader(f)] == list(table)


def test_sweep_rerun_skips_finished_and_resumes_unfinished(swept, capsys):
    out, _ = swept
    summaries = sorted(out.glob("*/seed*/summary.json"))
    mtimes = {p: p.stat().st_mtime_ns for p in summaries}
    sweep.main(_sweep_args(out))
    text = capsys.readouterr().out
    assert "launched 0, skipped 4 finished, failed 0" in text, text
    assert {p: p.stat().st_mtime_ns for p in summaries} == mtimes
    assert len(_parse_table(text)) == 2

    # An unfinished run with a checkpoint continues from it: here one stopped by Ctrl-C, whose
    # summary.json says so (a run killed outright has none; it resumes the same way).
    unfinished = out / "agent.learning_rate=5e-4" / "seed1"
    summary = json.loads((unfinished / "summary.json").read_text())
    (unfinished / "summary.json").write_text(json.dumps({**summary, "stopped_by": "SIGINT"}))
    sweep.main(_sweep_args(out))
    text = capsys.readouterr().out
    assert "launched 1, skipped 3 finished, failed 0" in text, text
    assert "seed=1 -> " in text and "(resuming)" in text
    assert (unfinished / "summary.json").exists()
    assert {p: p.stat().st_mtime_ns for p in summaries if p.parent != unfinished} == {
        p: t for p, t in mtimes.items() if p.parent != unfinished}


def test_plot_writes_a_png_of_the_sweep(swept, tmp_path):
    out, _ = swept
    path = plot.main([str(out), "--output", str(tmp_path / "curves.png")])
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 400, image.shape
    assert os.path.getsize(path) > 10_000 and image.std() > 0
    groups = plot.group_curves(rundir.find_runs([str(out)]), "episode/return_mean")
    assert {k: len(v) for k, v in groups.items()} == {
        "agent.learning_rate=1e-3": 2, "agent.learning_rate=5e-4": 2}


def test_long_legend_labels_are_wrapped_under_the_axes_and_short_ones_stay_inside():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    long_label = " ".join(f"agent.field_{i}=0.000{i}" for i in range(8))  # ~150 characters
    fig, (short_ax, long_ax) = plt.subplots(1, 2)
    short_ax.plot([0, 1], [0, 1], label="lr=1e-3")
    long_ax.plot([0, 1], [0, 1], label=long_label)
    long_ax.plot([0, 1], [1, 0], label=long_label + " seed=1")
    height = fig.get_figheight()
    plot.add_legend(short_ax)
    assert fig.get_figheight() == height  # a legend inside the axes needs no room
    plot.add_legend(long_ax, width=60)
    assert fig.get_figheight() > height + 0.17 * 6  # room for the legend's >= 6 lines
    fig.canvas.draw()
    short, long_ = short_ax.get_legend(), long_ax.get_legend()
    assert [t.get_text() for t in short.get_texts()] == ["lr=1e-3"]
    texts = [t.get_text() for t in long_.get_texts()]
    assert all("\n" in t and max(map(len, t.split("\n"))) <= 60 for t in texts), texts
    assert [t.replace("\n  ", " ") for t in texts] == [long_label, long_label + " seed=1"]
    renderer = fig.canvas.get_renderer()
    # Under the axes: the legend's top is below the axes' bottom; the short one is inside.
    assert long_.get_window_extent(renderer).y1 < long_ax.get_window_extent(renderer).y0
    inside = short_ax.get_window_extent(renderer)
    assert inside.contains(*short.get_window_extent(renderer).get_points().mean(axis=0))
    plt.close(fig)


def test_plot_falls_back_to_tensorboard_and_groups_by_config(swept, tmp_path):
    out, _ = swept
    for i, run in enumerate(sorted(out.glob("*/seed*"))):  # plain run dirs, no sweep labels
        copy = tmp_path / f"run{i}"
        shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoints"))
        (copy / "metrics.jsonl").unlink()
        (copy / "sweep_run.json").unlink()
    source = sorted(out.glob("*/seed*"))[0]
    jsonl = rundir.load_curve(str(source), "episode/return_mean")
    events = rundir.load_curve(str(tmp_path / "run0"), "episode/return_mean")
    assert np.array_equal(events["step"], jsonl["step"])
    assert events["value"] == pytest.approx(jsonl["value"], rel=1e-6)  # float32 in events
    labels = set(rundir.labels(rundir.find_runs([str(tmp_path)])).values())
    assert labels == {"agent.learning_rate=0.001", "agent.learning_rate=0.0005"}
    assert os.path.exists(plot.main([str(tmp_path), "--output", str(tmp_path / "tb.png")]))


@pytest.mark.parametrize("token, message", [
    ("agent.learning_rate", "expected field=value"),
    ("agent.learning_rate=1e-3,,5e-4", "empty value"),
    ("network.mlp_hidden_sizes=(64,64),(32,32", "unclosed bracket"),
    ("network.mlp_hidden_sizes=(64,64)),(32,)", "unbalanced"),
    ("seed=0,1", "--seeds"),
])
def test_bad_grid_tokens_are_named(token, message):
    with pytest.raises(sweep.SweepError, match=message) as err:
        sweep.parse_grid([token])
    assert repr(token) in str(err.value)


def test_grid_values_split_outside_brackets_and_unknown_fields_fail(tmp_path, capsys):
    assert sweep.parse_grid(["network.mlp_hidden_sizes=(64,64),(32,),[1, 2]"]) == [
        ("network.mlp_hidden_sizes", ["(64,64)", "(32,)", "[1, 2]"])]
    args = _sweep_args(tmp_path / "x")
    args[args.index("--grid") + 1] = "agent.learnin_rate=1e-3"
    with pytest.raises(SystemExit):
        sweep.main(args)
    assert "no field 'agent.learnin_rate'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing launched, nothing written


def test_seed_statistics():
    values = [1.0, 2.0, 4.0, 7.0]
    low, high = rundir.t_interval(values)
    half = stats.t.ppf(0.975, 3) * np.std(values, ddof=1) / 2
    assert (low, high) == pytest.approx((3.5 - half, 3.5 + half))
    assert rundir.t_interval([1.0]) is None
    assert rundir.iqm(values[:3]) is None
    assert rundir.iqm(values) == pytest.approx(3.0)  # the middle two of four
    assert rundir.iqm(list(range(8))) == pytest.approx(np.mean(range(2, 6)))


def test_benchmark_rows_and_study_plot(tmp_path):
    path = tmp_path / "b.csv"
    throughput.main(["--env", "CartPole-v1", "--algo", "ppo", "--num_envs", "8",
                    "--actor_threads", "1", "--seconds", "0.2", "--measures",
                     "env_only,env_infer", "--csv", str(path)])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == report.CSV_COLUMNS
    assert [(r["measure"], r["algo"]) for r in rows] == [("env_only", "-"),
                                                         ("env_infer", "ppo")]
    assert all(float(r["steps_per_s"]) > 0 and float(r["load1"]) >= 0 for r in rows)
    png = tmp_path / "study.png"
    throughput.plot_study([{**r, "num_envs": int(r["num_envs"]),
                           "steps_per_s": float(r["steps_per_s"])} for r in rows], str(png), "t")
    assert matplotlib.image.imread(str(png)).shape[0] > 100
