"""benchmarks/startup_time.py on a real run: launch to first update, and the persistent
compilation cache a run turns on."""
import csv
import os

from benchmarks import startup_time
from tests.helpers import ROOT


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
