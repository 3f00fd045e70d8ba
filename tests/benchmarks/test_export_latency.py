"""benchmarks/export_latency.py runs end to end on an untrained CartPole agent (a smoke test:
the figures are read in docs/deploy.md, not asserted)."""
from benchmarks import export_latency
from tests.helpers import ROOT


def test_the_latency_benchmark_times_both_policies_at_each_batch():
    rows = export_latency.main(["--config", f"{ROOT}/experiments/configs/impala_classic.py",
                                "--batches", "1,4", "--seconds", "0.05"])
    assert [(r["policy"].split()[0], r["batch"]) for r in rows] == [
        ("exported", 1), ("library", 1), ("exported", 4), ("library", 4)]
    assert all(r["calls"] >= 20 and r["median_ms"] > 0 for r in rows)
