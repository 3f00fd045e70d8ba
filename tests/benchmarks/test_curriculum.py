"""benchmarks/curriculum.py: the table recomputed from per-seed rows (IQM and interval of
return and crash rate per condition and traffic), and a tiny run end to end whose periodic
evaluations play the dense traffic in both conditions (slow; the figures are read in
docs/howto_env.md, not asserted)."""
import csv
import os
import json

import pytest

from benchmarks import curriculum


def test_the_table_is_the_iqm_of_the_seeds_per_condition_and_traffic(tmp_path):
    path = tmp_path / "c.csv"
    rows = [{"condition": "dense", "seed": s, "env_steps": 10, "traffic": "dense", "return": r,
             "crash_rate": c, "episodes": 4, "train_wall_s": 1.0}
            for s, (r, c) in enumerate([(10, 0.5), (20, 0.25), (30, 0.75), (40, 1.0)])]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, curriculum.FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    text = curriculum.table(str(path))
    # IQM of 10, 20, 30, 40: the mean of the middle half, (20 + 30) / 2; of the crash rates
    # 0.25, 0.5, 0.75, 1.0: 0.625.
    assert "| `car_gap=uniform(2.5, 4.0)` | 4 | 25.00 [" in text and "| 0.62" in text
    assert "| 10.0, 20.0, 30.0, 40.0 | 0.50, 0.25, 0.75, 1.00 |" in text
    assert "curriculum" not in text and "default" not in text  # no rows, no line


@pytest.mark.slow
def test_a_tiny_run_writes_rows_curves_and_a_plot(tmp_path):
    path = tmp_path / "c.csv"
    args = ["--seeds", "0", "--steps", "2048", "--eval_every", "2", "--episodes", "4",
            "--csv", str(path), "--runs", str(tmp_path / "runs")]
    curriculum.main(["run", *args])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert [(r["condition"], r["traffic"]) for r in rows] == [
        (c, t) for c in curriculum.CONDITIONS for t in curriculum.TRAFFIC]
    assert all(0.0 <= float(r["crash_rate"]) <= 1.0 and r["episodes"] == "4" for r in rows)
    with open(tmp_path / "c_curves.csv") as f:
        curves = list(csv.DictReader(f))
    assert {r["condition"] for r in curves} == set(curriculum.CONDITIONS)
    # The curriculum's evaluations play the schedule's end: the dense traffic.
    logged = tmp_path / "runs" / "curriculum-s0" / "metrics.jsonl"
    gaps = [json.loads(line).get("eval/scenario/car_gap") for line in
            logged.read_text().splitlines()]
    gaps = [g for g in gaps if g is not None]
    assert gaps and all(2.5 <= g <= 4.0 for g in gaps)
    curriculum.main(["run", *args])  # every run is in the CSV: nothing runs again
    with open(path) as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    curriculum.main(["plot", "--csv", str(path)])
    assert (tmp_path / "c_curves.png").stat().st_size > 1000


def test_the_howto_table_is_the_one_the_csv_gives():
    """docs/howto_env.md's curriculum table is the one the committed per-seed rows give."""
    howto = open(os.path.join(curriculum.DOCS, "howto_env.md")).read()
    assert curriculum.table() in howto
