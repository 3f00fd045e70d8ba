"""benchmarks/memory_soak.py: the growth figure is taken after warm-up (the run itself is too long
for the test suite; docs/robustness.md has the measured figure)."""
from benchmarks import memory_soak


def test_summary_ignores_warmup_growth():
    rows = [{"time_s": t, "rss_mb": 100.0 + (50.0 if t >= 60 else 0.0) + 0.01 * t,
             "num_threads": 30, "num_fds": 7, "env_steps": 1000 * t} for t in range(0, 600, 5)]
    s = memory_soak.summarize(rows, warmup_s=120)
    assert abs(s["rss_warm_mb"] - 151.2) < 1e-6 and abs(s["growth_mb"] - 0.01 * 475) < 1e-6
    assert abs(s["slope_mb_per_h"] - 36.0) < 1e-6
    assert s["rss_peak_mb"] == rows[-1]["rss_mb"] and s["env_steps"] == 595_000
