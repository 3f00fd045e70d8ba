"""benchmarks/scenarios.py: the table recomputed from per-seed rows (IQM and interval, the
first CartPole rows' column name read too), and a tiny run end to end with its curves and
plot (slow; the figures are read in docs/howto_env.md, not asserted)."""
import csv
import dataclasses
import os

import pytest

from benchmarks import scenarios


def _write(path, rows, fields=scenarios.FIELDS):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize("column", ["value", "length"])
def test_the_table_is_the_iqm_of_the_seeds_per_condition_and_value(tmp_path, column):
    path = tmp_path / "s.csv"
    rows = [{"condition": "fixed", "seed": s, "env_steps": 10, column: 0.5, "return": r,
             "episodes": 4, "train_wall_s": 1.0} for s, r in enumerate([10, 20, 30, 40])]
    _write(path, rows, [column if f == "value" else f for f in scenarios.FIELDS])
    text = scenarios.table(dataclasses.replace(scenarios.TASKS["cartpole"], csv=str(path)))
    # IQM of 10, 20, 30, 40: the mean of the middle half, (20 + 30) / 2.
    assert "| fixed 0.5 | 0.5 | 25.0 [" in text and "| 10, 20, 30, 40 |" in text
    assert "uniform" not in text  # a condition without rows has no line


@pytest.mark.slow
def test_a_tiny_run_writes_rows_curves_and_a_plot(tmp_path):
    path = tmp_path / "s.csv"
    scenarios.main(["run", "--task", "pendulum", "--steps", "4096", "--seeds", "2",
                    "--episodes", "2", "--csv", str(path)])
    task = scenarios.TASKS["pendulum"]
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(task.conditions) * 2 * len(task.values)
    assert all(-2000 < float(r["return"]) < 0 for r in rows)
    with open(tmp_path / "s_curves.csv") as f:
        curves = list(csv.DictReader(f))
    assert {(r["condition"], r["seed"]) for r in curves} == {
        (c, s) for c in task.conditions for s in ("0", "1")}
    scenarios.main(["plot", "--task", "pendulum", "--csv", str(path)])
    assert (tmp_path / "s_curves.png").stat().st_size > 1000


@pytest.mark.parametrize("task", sorted(scenarios.TASKS))
def test_the_howto_tables_are_the_committed_rows(task):
    """docs/howto_env.md's table of each task is the one its committed per-seed rows give (the
    bootstrap is seeded, so it recomputes to the digit)."""
    howto = open(os.path.join(scenarios.DOCS, "howto_env.md")).read()
    assert scenarios.table(scenarios.TASKS[task]) in howto
