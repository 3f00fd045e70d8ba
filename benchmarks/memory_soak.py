"""Memory soak: does a long training run keep a flat resident set size?

Starts a real training run (`experiments/impala_atari.py` with the IMPALA CartPole config,
`experiments/configs/impala_classic.py`, effectively endless) as a subprocess, samples its
RSS, thread count and open file descriptors with psutil every `--interval` seconds, and after
`--minutes` stops it with SIGTERM (the graceful pre-emption path: final checkpoint, exit 0).

Checkpoints are saved every `--checkpoint_every_minutes` (default 2, so a 20-minute soak also
exercises ten saves). The first `--warmup_minutes` cover compilation, allocator pools and the
first checkpoint save (orbax starts its threads then), which all grow memory once. The figure
that matters is the growth after warm-up: RSS at the end minus RSS at the end of warm-up, and
a least-squares slope in MB per hour over the post-warm-up samples. A subprocess keeps this
script's own memory out of the figure.

`--malloc_arena_max N` runs the training with glibc's MALLOC_ARENA_MAX=N, which keeps the
short-lived checkpoint threads from growing new malloc arenas (see docs/robustness.md).

Writes a CSV (time_s, rss_mb, num_threads, num_fds, env_steps) and prints a summary; exits 1
when `--max_growth_mb` is given and exceeded. See docs/robustness.md for measured figures.

Usage:
    python -m benchmarks.memory_soak [--minutes 20] [--warmup_minutes 3] [--interval 5]
        [--checkpoint_every_minutes 2] [--malloc_arena_max N] [--csv memory_soak.csv]
        [--config experiments/configs/impala_classic.py] [--run_dir DIR]
        [--max_growth_mb MB] [-- --config.num_envs=32 ...]

Arguments after `--` are passed to the training script (config overrides).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _last_env_steps(run_dir: str) -> int:
    """env step of the newest metrics.jsonl line (reads only the file's tail)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 8192))
            lines = f.read().splitlines()
        for line in reversed(lines):
            try:
                return int(json.loads(line)["step"])
            except (ValueError, KeyError):
                continue  # a partial first line or one still being written
    except OSError:
        pass
    return 0


def summarize(rows: list[dict], warmup_s: float) -> dict[str, float]:
    """Growth after warm-up: end minus first post-warm-up sample, slope (MB/h), peak."""
    after = [r for r in rows if r["time_s"] >= warmup_s] or rows[-1:]
    t = np.array([r["time_s"] for r in after])
    rss = np.array([r["rss_mb"] for r in after])
    slope = float(np.polyfit(t, rss, 1)[0] * 3600) if len(after) > 2 else float("nan")
    return {"rss_start_mb": float(rows[0]["rss_mb"]), "rss_warm_mb": float(rss[0]),
            "rss_end_mb": float(rss[-1]), "rss_peak_mb": float(max(r["rss_mb"] for r in rows)),
            "growth_mb": float(rss[-1] - rss[0]), "slope_mb_per_h": slope,
            "threads_warm": after[0]["num_threads"], "threads_end": after[-1]["num_threads"],
            "fds_warm": after[0]["num_fds"], "fds_end": after[-1]["num_fds"],
            "env_steps": rows[-1]["env_steps"]}


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.memory_soak",
        description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--warmup_minutes", type=float, default=3.0)
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--checkpoint_every_minutes", type=float, default=2.0)
    parser.add_argument("--malloc_arena_max", type=int, default=0,
                        help="set MALLOC_ARENA_MAX for the run (glibc; 0 = leave as is)")
    parser.add_argument("--csv", default="memory_soak.csv")
    parser.add_argument("--config", default=os.path.join("experiments", "configs",
                                                         "impala_classic.py"))
    parser.add_argument("--run_dir", default="", help="default: a temporary dir, removed after")
    parser.add_argument("--max_growth_mb", type=float, default=None)
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    if args.warmup_minutes >= args.minutes:
        parser.error(f"--warmup_minutes={args.warmup_minutes} must be below "
                     f"--minutes={args.minutes}.")
    run_dir = args.run_dir or tempfile.mkdtemp(prefix="memory_soak-")
    cmd = [sys.executable, os.path.join(ROOT, "experiments", "impala_atari.py"),
           f"--config={args.config}", "--config.total_env_steps=100000000000",
           f"--config.run_dir={os.path.join(run_dir, 'run')}", "--config.console_every_s=60",
           f"--config.checkpoint_every_minutes={args.checkpoint_every_minutes}",
           *extra]
    print("running:", " ".join(cmd), flush=True)
    log = open(os.path.join(run_dir, "train.log"), "w")
    env = dict(os.environ)
    if args.malloc_arena_max > 0:
        env["MALLOC_ARENA_MAX"] = str(args.malloc_arena_max)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    child = psutil.Process(proc.pid)
    rows: list[dict] = []
    start = time.time()
    ok = interrupted = False
    # SIGTERM (like Ctrl-C) ends the soak early but still stops the run and summarises.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, ["time_s", "rss_mb", "num_threads", "num_fds",
                                        "env_steps"])
            writer.writeheader()
            while time.time() - start < 60 * args.minutes:
                if proc.poll() is not None:
                    print(f"training exited early with status {proc.returncode}; see "
                          f"{log.name}", flush=True)
                    return 1
                row = {"time_s": round(time.time() - start, 1),
                       "rss_mb": round(child.memory_info().rss / 2**20, 2),
                       "num_threads": child.num_threads(), "num_fds": child.num_fds(),
                       "env_steps": _last_env_steps(os.path.join(run_dir, "run"))}
                rows.append(row)
                writer.writerow(row)
                f.flush()
                time.sleep(args.interval)
        ok = bool(rows)
    except KeyboardInterrupt:
        interrupted = True
        print(f"interrupted after {(time.time() - start) / 60:.1f} min; summarising the "
              f"samples so far.", flush=True)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # graceful: final checkpoint, exit 0
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        if not args.run_dir and ok:  # keep train.log when the run failed
            shutil.rmtree(run_dir, ignore_errors=True)
    if not rows:
        return 1
    s = summarize(rows, 60 * args.warmup_minutes)
    print(f"samples: {len(rows)} over {rows[-1]['time_s'] / 60:.1f} min ({s['env_steps']:,d} "
          f"env steps); csv: {args.csv}")
    print(f"RSS start {s['rss_start_mb']:.0f} MB, after {args.warmup_minutes:g} min warm-up "
          f"{s['rss_warm_mb']:.0f} MB, end {s['rss_end_mb']:.0f} MB, peak "
          f"{s['rss_peak_mb']:.0f} MB")
    print(f"growth after warm-up: {s['growth_mb']:+.1f} MB (slope {s['slope_mb_per_h']:+.1f} "
          f"MB/h); threads {s['threads_warm']} -> {s['threads_end']}, open fds "
          f"{s['fds_warm']} -> {s['fds_end']}", flush=True)
    if args.max_growth_mb is not None and s["growth_mb"] > args.max_growth_mb:
        print(f"FAIL: growth {s['growth_mb']:.1f} MB > --max_growth_mb {args.max_growth_mb}")
        return 1
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
