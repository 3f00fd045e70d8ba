"""scripts/minatar_table.py: the MinAtar tables of docs/minatar.md, docs/results.md and
docs/anakin.md are what the committed per-seed CSVs give; `export` turns run dirs into such a
CSV (grid rows per seed, other games' rows kept); `compare` reports its tests."""
from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

from scripts import minatar_table

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_the_docs_tables_are_the_committed_csv():
    pytest.importorskip("rliable", reason="the intervals need rliable (requirements.txt)")
    text = minatar_table.main(["table"])
    with open(os.path.join(ROOT, "docs", "minatar.md")) as f:
        doc = f.read()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 4, text  # two headers and at least one game in each table
    missing = [row for row in rows if row not in doc]
    assert not missing, f"docs/minatar.md lacks these rows of the recomputed table: {missing}"


def test_the_results_page_quotes_the_committed_csv():
    """docs/results.md's MinAtar rows give each game's 5M IQM [CI] as the script computes it."""
    pytest.importorskip("rliable", reason="the intervals need rliable (requirements.txt)")
    rows = minatar_table.read(minatar_table.CSV)
    with open(os.path.join(ROOT, "docs", "results.md")) as f:
        lines = f.read().splitlines()
    games = [g for g in minatar_table.GAMES if any(r["game"] == g for r in rows)]
    assert games
    for game in games:
        five = minatar_table.scores(rows, game, minatar_table.AT[-1])
        cell = minatar_table.interval([five])
        row = [line for line in lines if line.startswith(f"| {game}-MinAtar, 5M steps |")]
        assert len(row) == 1 and f"IQM {cell}" in row[0], (game, cell, row)


def test_the_runtime_comparison_is_the_committed_csvs():
    """docs/anakin.md's Anakin vs Sebulba table is `compare` on the two committed CSVs."""
    pytest.importorskip("rliable", reason="the intervals need rliable (requirements.txt)")
    sebulba = os.path.join(ROOT, "docs", "minatar_breakout_sebulba.csv")
    text = minatar_table.main(["compare", f"Anakin={minatar_table.CSV}", f"Sebulba={sebulba}",
                               "--game", "Breakout"])
    with open(os.path.join(ROOT, "docs", "anakin.md")) as f:
        doc = f.read()
    rows = [line for line in text.splitlines() if "---" not in line]
    assert len(rows) == 5, text
    missing = [row for row in rows if row not in doc]
    assert not missing, f"docs/anakin.md lacks these rows of the recomputed table: {missing}"


def _member(run, index, seed, game, points):
    _seed_run(run / "members" / f"{index:02d}-s{seed}", seed, game, points)


def _seed_run(member, seed, game, points):
    """A run dir of one seed: config.json and metrics.jsonl with `points` (step, value)."""
    member.mkdir(parents=True)
    (member / "config.json").write_text(json.dumps(
        {"seed": seed, "env": {"name": f"gymnax:{game}-MinAtar"}}))
    with open(member / "metrics.jsonl", "w") as f:
        for step, value in points:
            f.write(json.dumps({"step": step, "time": 1000.0 + step / 1e4,
                                "episode/return_mean": value}) + "\n")


def test_export_writes_grid_rows_and_keeps_other_games(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("game,seed,step,return_mean,train_s,commit\n"
                    "Asterix,0,100000,1.0,5.0,abc\nBreakout,0,100000,99.0,5.0,abc\n")
    run = tmp_path / "run"
    for seed in (0, 1):  # updates of 81,920 steps; seed 1 stopped at 250k
        last = 400_000 if seed == 0 else 250_000
        points = [(s, float(seed * 100 + s // 81_920))
                  for s in range(81_920, last + 81_920, 81_920) if s <= last + 1]
        _member(run, seed, seed, "Breakout", points)
    rows = minatar_table.export([str(run)], str(path), "deadbeef")
    got = {(r["seed"], r["step"]): r["return_mean"] for r in rows}
    # 100k: the update at 81,920 (the last at or before it); 300k: 245,760 (the third).
    assert got[(0, 100_000)] == 1.0 and got[(0, 300_000)] == 3.0 and got[(0, 400_000)] == 4.0
    assert (0, 500_000) not in got  # not reached: the next update would be past 400k + 81,920
    assert got[(1, 200_000)] == 102.0 and (1, 400_000) not in got
    kept = minatar_table.read(str(path))
    assert [r["game"] for r in kept].count("Asterix") == 1
    assert not any(r["return_mean"] == "99.0" for r in kept)  # Breakout's old rows replaced
    assert {r["commit"] for r in kept if r["game"] == "Breakout"} == {"deadbeef"}


def test_export_refuses_a_dir_that_is_not_a_run(tmp_path):
    with pytest.raises(SystemExit, match="has neither members/ nor metrics.jsonl"):
        minatar_table.export([str(tmp_path)], str(tmp_path / "x.csv"), "c")


def test_export_reads_single_seed_run_dirs(tmp_path):
    """A Sebulba seed is its own run dir: config.json and metrics.jsonl at its top."""
    runs = [tmp_path / f"s{seed}" for seed in (3, 4)]
    for seed, run in zip((3, 4), runs):
        _seed_run(run, seed, "Breakout", [(100_000, float(seed))])
    rows = minatar_table.export([str(r) for r in runs], str(tmp_path / "x.csv"), "c")
    assert [(r["seed"], r["step"], r["return_mean"]) for r in rows] == [
        (3, 100_000, 3.0), (4, 100_000, 4.0)]


def _csv(path, values):
    """A CSV of Breakout rows: `values[seed]` at every step of COMPARE_AT."""
    rows = [{"game": "Breakout", "seed": seed, "step": step, "return_mean": value,
             "train_s": 1.0, "commit": "c"}
            for seed, value in enumerate(values) for step in minatar_table.COMPARE_AT]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, minatar_table.FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def test_compare_reports_the_tests_and_the_detectable_gap(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.normal(10.0, 2.0, 10), rng.normal(30.0, 4.0, 8)
    text = minatar_table.main(["compare", f"A={_csv(tmp_path / 'a.csv', a)}",
                               f"B={_csv(tmp_path / 'b.csv', b)}", "--game", "Breakout"])
    lines = text.splitlines()
    assert "A, IQM of 10 seeds" in lines[0] and "B, IQM of 8 seeds" in lines[0]
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| 1M", "| 2.5M", "| 4M", "| 5M"]
    cells = lines[-1].strip("| ").split(" | ")
    # Every b above every a: the exact two-sided U p is 2 / C(18, 8) = 4.6e-5.
    assert cells[3].startswith("0.00 (0.00)")
    gap = 2.8 * np.sqrt(a.var(ddof=1) / 10 + b.var(ddof=1) / 8)
    assert cells[4] == f"{gap:.1f}"
    same = minatar_table.main(["compare", f"A={tmp_path / 'a.csv'}", f"B={tmp_path / 'a.csv'}",
                               "--game", "Breakout"])
    assert same.splitlines()[-1].split(" | ")[3] == "1.00 (1.00)"


def test_steps_before_any_game_ended_have_no_row(tmp_path):
    """Freeway's games last 2,500 steps: with 64 envs none ends before 160k, so the first
    updates log a NaN mean (and a run may log nothing at all before its first point)."""
    run = tmp_path / "run"
    _member(run, 0, 0, "Freeway", [(81_920, float("nan")), (163_840, float("nan")),
                                   (245_760, 2.0), (327_680, 3.0)])
    rows = minatar_table.export([str(run)], str(tmp_path / "scores.csv"), "c")
    assert [(r["step"], r["return_mean"]) for r in rows] == [(300_000, 2.0), (400_000, 3.0)]
