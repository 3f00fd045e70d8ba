"""Launch-to-first-update time: how long a training command takes to produce its first update.

Starts the experiment as a user would (a fresh Python process), waits for the first line of
its metrics.jsonl (written right after the first learner update), then stops it with SIGTERM.
The time counts everything a user waits for: Python and JAX imports, env creation, compiling
the policy and the learner, the first rollout and the first update.

    python -m benchmarks.startup_time [--repeat 2] [--timeout 600] -- \\
        experiments/impala_atari.py --config=experiments/configs/impala_classic.py

Everything after `--` is the command's script and arguments (run with this Python); the
script adds `--config.run_dir=<tmp>` and `--config.checkpoint_keep=0`. With `--repeat 2` the
second launch shows the effect of JAX's persistent compilation cache (`compilation_cache_dir`
in the runtime config; a launch with `--config.compilation_cache_dir=` compiles from scratch).
Prints one line per launch; `--csv PATH` appends them.
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


def time_to_first_update(command: list[str], timeout_s: float) -> tuple[float, dict]:
    """Seconds from launch to the first metrics.jsonl row, and that row."""
    run_dir = tempfile.mkdtemp(prefix="sebulba-startup-")
    metrics = os.path.join(run_dir, "metrics.jsonl")
    cmd = [sys.executable, *command, f"--config.run_dir={run_dir}", "--config.checkpoint_keep=0"]
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        while True:
            if os.path.exists(metrics) and os.path.getsize(metrics) > 0:
                with open(metrics) as f:
                    line = f.readline()
                if line.endswith("\n"):
                    row = json.loads(line)
                    # The row's own timestamp: when the learner logged, not when we looked.
                    return row["time"] - start, row
            if proc.poll() is not None:
                out = proc.stdout.read() if proc.stdout else ""
                raise RuntimeError(f"the command ended (status {proc.returncode}) before its "
                                   f"first update:\n{out[-3000:]}")
            if time.time() - start > timeout_s:
                raise TimeoutError(f"no update within {timeout_s:.0f}s: {' '.join(cmd)}")
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(run_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.startup_time", description=__doc__.split("\n\n")[0],
        usage="%(prog)s [--repeat N] [--timeout S] [--csv PATH] [--label NAME] -- "
              "experiments/<script>.py [--config=...] [--config.x=y ...]")
    p.add_argument("--repeat", type=int, default=1, help="launches in a row (cache warm-up)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per launch")
    p.add_argument("--csv", default="", help="append one row per launch to this CSV")
    p.add_argument("--label", default="", help="a name for this setting in the CSV rows")
    opts = p.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        p.error("no command to time: give it after `--`")
    for i in range(opts.repeat):
        seconds, row = time_to_first_update(command, opts.timeout)
        load1 = os.getloadavg()[0]
        print(f"launch {i + 1}: first update after {seconds:.1f}s (env step {row['step']:,d}, "
              f"load1 {load1:.1f}): {' '.join(command)}", flush=True)
        if opts.csv:
            new = not os.path.exists(opts.csv)
            with open(opts.csv, "a", newline="") as f:
                w = csv.writer(f)
                if new:
                    w.writerow(["label", "launch", "first_update_s", "load1", "cpus", "time",
                                "command"])
                w.writerow([opts.label, i + 1, f"{seconds:.2f}", f"{load1:.2f}", os.cpu_count(),
                            int(time.time()), " ".join(command)])


if __name__ == "__main__":
    main()
