"""benchmarks/export_latency.py runs end to end on an untrained CartPole agent (a smoke test:
the figures are read in docs/deploy.md, not asserted): the export through each runtime the
loader has here (onnxruntime where the ONNX extra is installed) and the library's player."""
import importlib.util

from benchmarks import export_latency
from tests.helpers import ROOT


def test_the_latency_benchmark_times_both_policies_at_each_batch():
    rows = export_latency.main(["--config", f"{ROOT}/experiments/configs/impala_classic.py",
                                "--batches", "1,4", "--seconds", "0.05"])
    runtimes = ["jax", *(["onnxruntime"] if importlib.util.find_spec("jax2onnx") else [])]
    policies = [*(f"exported, {r}" for r in runtimes), "library"]
    assert [(r["policy"].split(" (")[0], r["batch"]) for r in rows] == [
        (p, b) for b in (1, 4) for p in policies]
    assert all(r["calls"] >= 20 and r["median_ms"] > 0 for r in rows)
