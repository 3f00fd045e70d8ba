"""scripts/benchmark.py measures the runtime's actor and the pre-overlap one in the same run."""
import csv

from scripts import benchmark


def test_env_infer_rows_for_both_actors(tmp_path):
    path = tmp_path / "b.csv"
    results = benchmark.main(["--env", "CartPole-v1", "--num_envs", "8", "--actor_threads", "2",
                              "--seconds", "0.5", "--measures", "env_infer", "--unroll_length",
                              "4", "--actor_impls", "before,current", "--actor_overlap", "on",
                              "--csv", str(path)])
    assert set(results) == {"env_infer[before]", "env_infer[current]"}
    assert all(v > 0 for v in results.values())
    with open(path) as f:
        details = [r["detail"] for r in csv.DictReader(f)]
    assert "before actor, one pool" in details[0]
    assert "current actor, overlapped half-pools" in details[1]
