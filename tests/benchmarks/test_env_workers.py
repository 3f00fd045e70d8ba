"""benchmarks/env_workers.py runs end to end (a smoke test: the figures are read in
docs/howto_env.md, not asserted)."""
import pytest

from benchmarks import env_workers


def test_the_env_only_measure_runs_each_setting():
    rows = env_workers.main(["--measures", "env_only", "--rounds", "1", "--workers", "0,2",
                             "--env_seconds", "0.5", "--step_ms", "0.05"])
    assert [(r["measure"], r["workers"]) for r in rows] == [("env_only", 0), ("env_only", 2)]
    assert all(r["sps"] > 0 for r in rows)


@pytest.mark.slow
def test_the_train_measure_reads_the_runs_timings():
    rows = env_workers.main(["--measures", "train", "--rounds", "1", "--workers", "0,2",
                             "--steps", "4096", "--skip_updates", "1", "--step_ms", "0.05"])
    assert [r["workers"] for r in rows] == [0, 2]
    for r in rows:
        assert r["sps"] > 0 and r["actor_env_s"] > 0 and r["learner_step_s"] > 0, r
