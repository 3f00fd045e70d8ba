"""scripts/sweep.py on a 2-setting x 2-seed CartPole micro sweep (run, skip, resume, table) and
scripts/plot.py on its runs.

The sweep launches real child processes (tests.helpers.micro_sweep_args: the impala_classic
`:debug` variant, 2,048 steps): about 20-40 s on 2 CPU cores.
"""
import contextlib
import csv
import io
import json
import os
import shutil

import matplotlib.image
import numpy as np
import pytest

from scripts import plot, sweep
from scripts.analysis import rundir
from tests.helpers import micro_sweep_args


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
        sweep.main(micro_sweep_args(out))
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
    sweep.main(micro_sweep_args(out))
    text = capsys.readouterr().out
    assert "launched 0, skipped 4 finished, failed 0" in text, text
    assert {p: p.stat().st_mtime_ns for p in summaries} == mtimes
    assert len(_parse_table(text)) == 2

    # An unfinished run with a checkpoint continues from it: here one stopped by Ctrl-C, whose
    # summary.json says so (a run killed outright has none; it resumes the same way).
    unfinished = out / "agent.learning_rate=5e-4" / "seed1"
    summary = json.loads((unfinished / "summary.json").read_text())
    (unfinished / "summary.json").write_text(json.dumps({**summary, "stopped_by": "SIGINT"}))
    sweep.main(micro_sweep_args(out))
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
