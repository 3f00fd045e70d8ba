"""benchmarks/startup_time.py (launch to first update), the persistent compilation cache a run
turns on, and benchmarks/study_table.py (the GPU study's table)."""
import csv


from benchmarks import study_table


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
