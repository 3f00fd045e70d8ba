"""benchmarks/startup_time.py (launch to first update), the persistent compilation cache a run
turns on, and benchmarks/study_table.py (the GPU study's table)."""
import csv
import os

import pytest

from benchmarks import startup_time, study_table
from tests.helpers import ROOT


@pytest.mark.slow  # a run in a subprocess, timed to its first update: `-m "not slow"` skips
def test_startup_time_reports_the_first_update_and_the_cache_fills(tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "startup.csv"
    startup_time.main(["--csv", str(out), "--label", "cartpole", "--timeout", "300", "--",
                       os.path.join(ROOT, "experiments", "impala_atari.py"),
                       f"--config={os.path.join(ROOT, 'experiments', 'configs', 'impala_classic.py')}",
                       f"--config.compilation_cache_dir={cache}"])
    with open(out, newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["label"] == "cartpole" and row["launch"] == "1"
    assert 0 < float(row["first_update_s"]) < 300
    # On by default in every run: the learner (and the jitted init) took long enough to keep.
    entries = os.listdir(cache)
    assert any(e.startswith("jit_per_device") for e in entries), entries


def test_study_table_joins_benchmark_and_startup_rows(tmp_path):
    bench = tmp_path / "bench_2x64.csv"
    with open(bench, "w", newline="") as f:
        w = csv.DictWriter(f, ["measure", "steps_per_s", "num_envs", "actor_threads", "load1"])
        w.writeheader()
        for measure, sps in [("env_only", 16000), ("env_infer", 12000), ("learner", 70000),
                             ("end_to_end", 14400)]:
            w.writerow(dict(measure=measure, steps_per_s=sps, num_envs=128, actor_threads=2,
                            load1=3.5))
    startup = tmp_path / "startup.csv"
    with open(startup, "w", newline="") as f:
        w = csv.DictWriter(f, ["label", "launch", "first_update_s"])
        w.writeheader()
        w.writerow(dict(label="2x64", launch=1, first_update_s=19.0))
        w.writerow(dict(label="2x64", launch=2, first_update_s=7.5))
    text = study_table.table({"2x64": study_table._rows(str(bench))},
                             study_table._rows(str(startup)))
    row = text.splitlines()[2]
    assert row == ("| 2x64 | 128 x 2 | 16,000 | 12,000 | 70,000 | 14,400 | 0.90 | "
                   "19.0 s / 7.5 s | 3.5 |")
