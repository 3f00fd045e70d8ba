"""benchmarks/throughput.py prints Anakin rows (benchmarks/anakin_throughput.py) beside its
Sebulba rows, one per device count, with the Anakin / Sebulba ratios (a device count the process
lacks is measured in a fresh process: tests/slow/benchmarks/test_anakin_subprocess_rows.py)."""
import csv

from benchmarks import anakin_throughput, throughput


def test_anakin_rows_beside_the_sebulba_rows(tmp_path, capsys):
    path = tmp_path / "b.csv"
    results = throughput.main(["--env", "CartPole-v1", "--algo", "ppo_sync", "--num_envs", "8",
                              "--actor_threads", "1", "--unroll_length", "4", "--seconds",
                               "0.3", "--measures", "env_infer,anakin_act,anakin",
                               "--anakin_devices", "1,2", "--csv", str(path)])
    assert set(results) == {"env_infer", "anakin_act[1dev]", "anakin_act[2dev]",
                            "anakin[1dev]", "anakin[2dev]"}
    assert all(v > 0 for v in results.values()), results
    out = capsys.readouterr().out
    assert "anakin_act[2dev] / env_infer = " in out, out
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if r["measure"].startswith("anakin")]
    assert [(r["measure"], r["learner_devices"]) for r in rows] == [
        ("anakin_act", "0"), ("anakin_act", "0,1"), ("anakin", "0"), ("anakin", "0,1")]
    assert all(r["env"] == "gymnax:CartPole-v1" and r["num_envs"] == "8"
               and r["unroll_length"] == "4" and "in this process" in r["detail"]
               for r in rows), rows


def test_episode_metrics_are_measured_inside_the_update():
    """--set env.episode_metrics=... measures the update that reduces them (docs/benchmarks.md,
    "The cost of episode metrics on the device")."""
    for act_only in (False, True):
        row = anakin_throughput.measure(1, num_envs=8, unroll_length=4, seconds=0.2,
                                        act_only=act_only,
                                        sets=("env.episode_metrics=discount:mean",
                                              "agent.num_minibatches=1"))
        assert row["episode_metrics"] == "discount" and row["sps"] > 0, row
