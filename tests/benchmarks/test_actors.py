"""benchmarks/throughput.py measures the runtime's actor and the one without overlap in the same run."""
import csv

import pytest

from benchmarks import throughput


def test_env_infer_rows_for_both_actors(tmp_path):
    path = tmp_path / "b.csv"
    results = throughput.main(["--env", "CartPole-v1", "--num_envs", "8", "--actor_threads", "2",
                              "--seconds", "0.5", "--measures", "env_infer", "--unroll_length",
                               "4", "--actor_impls", "before,current", "--actor_overlap", "on",
                               "--csv", str(path)])
    assert set(results) == {"env_infer[before]", "env_infer[current]"}
    assert all(v > 0 for v in results.values())
    with open(path) as f:
        details = [r["detail"] for r in csv.DictReader(f)]
    assert "before actor, one pool" in details[0]
    assert "current actor, overlapped half-pools" in details[1]


def test_rounds_interleave_the_measures_and_return_their_medians(tmp_path, capsys):
    path = tmp_path / "b.csv"
    results = throughput.main(["--env", "CartPole-v1", "--num_envs", "4", "--actor_threads", "1",
                              "--seconds", "0.3", "--measures", "env_only,env_infer",
                               "--unroll_length", "4", "--rounds", "3", "--csv", str(path)])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    # Round by round: env_only, env_infer, env_only, env_infer, ...
    assert [r["measure"] for r in rows] == ["env_only", "env_infer"] * 3
    for m in ("env_only", "env_infer"):
        measured = sorted(float(r["steps_per_s"]) for r in rows if r["measure"] == m)
        assert abs(results[m] - measured[1]) <= 0.1  # the median (CSV keeps 1 decimal)
    assert "medians of 3 rounds" in capsys.readouterr().out


def test_rounds_must_be_positive():
    with pytest.raises(SystemExit):
        throughput.main(["--rounds", "0"])
