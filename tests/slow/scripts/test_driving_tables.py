"""docs/driving.md's tables recomputed by scripts/driving_table.py from the committed per-seed
CSV (docs/driving_ppo.csv), with 5 seeds or more per task. Slow: ~300 bootstrap intervals of
2,000 resamples each (~100 s on 2 cores)."""
import os

from scripts import driving_table


def test_the_docs_tables_are_the_committed_csv():
    text = driving_table.table(driving_table.read(driving_table.CSV))
    with open(os.path.join(driving_table.ROOT, "docs", "driving.md")) as f:
        doc = f.read()
    missing = [line for line in text.splitlines() if line and line not in doc]
    assert not missing, f"docs/driving.md lacks these lines of the recomputed table: {missing}"
    rows = driving_table.read(driving_table.CSV)
    for task in ("HighwayFast-v0", "Racetrack-v0", "Parking-v0"):
        seeds = {int(r["seed"]) for r in rows if r["task"] == task}
        assert len(seeds) >= 5, task  # the 5 seeds per task
