"""benchmarks/scenarios.py: the table recomputed from per-seed rows (IQM and interval), and a
tiny run end to end (slow; the figures are read in docs/howto_env.md, not asserted)."""
import csv

import pytest

from benchmarks import scenarios


def _write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, scenarios.FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def test_the_table_is_the_iqm_of_the_seeds_per_condition_and_length(tmp_path):
    path = tmp_path / "s.csv"
    rows = [{"condition": "fixed", "seed": s, "env_steps": 10, "length": 0.5, "return": r,
             "episodes": 4, "train_wall_s": 1.0} for s, r in enumerate([10, 20, 30, 40])]
    _write(path, rows)
    text = scenarios.table(str(path))
    # IQM of 10, 20, 30, 40: the mean of the middle half, (20 + 30) / 2.
    assert "| fixed 0.5 | 0.5 | 25.0 [" in text and "| 10, 20, 30, 40 |" in text
    assert "uniform" not in text  # a condition without rows has no line


@pytest.mark.slow
def test_a_tiny_run_writes_a_row_per_condition_seed_and_length(tmp_path):
    path = tmp_path / "s.csv"
    scenarios.main(["run", "--steps", "4096", "--seeds", "2", "--episodes", "2",
                    "--csv", str(path)])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(scenarios.CONDITIONS) * 2 * len(scenarios.LENGTHS)
    assert all(float(r["return"]) > 0 for r in rows)
