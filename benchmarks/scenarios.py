"""PPO on gymnax CartPole trained on the fixed pole (length 0.5) and on randomised lengths
(env.randomize), each evaluated greedily on pole lengths inside and outside the training range.

    python -m benchmarks.scenarios run [--steps N] [--seeds K] [--episodes E] [--csv PATH]
    python -m benchmarks.scenarios table [--csv PATH]

`run` trains, per condition, K seeds as one population (num_seeds: one compiled program,
docs/anakin.md) of experiments/configs/ppo_gymnax.py as it is (CartPole-v1, 500k steps by
default), then plays each member greedily with `python -m scripts.evaluate <run> --member m
--scenario length=choice(L)` for every held-out length L (E games each, the evaluation seeds,
disjoint from training's), and appends one row per condition, seed and length to the CSV: the
mean return of the E games. `table` recomputes the Markdown table of docs/howto_env.md from
the CSV: per condition and length, the IQM over seeds with its 95% stratified-bootstrap
interval (rliable, 2,000 resamples) and each seed's value.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

CSV = os.path.join(os.path.dirname(__file__), "..", "docs", "scenarios_cartpole.csv")
CONDITIONS = {"fixed": "", "randomised": "length=uniform(0.25, 1.0)"}  # env.randomize
LENGTHS = (0.1, 0.5, 1.5, 2.5)  # evaluated pole lengths (gymnax's default: 0.5)
FIELDS = ("condition", "seed", "env_steps", "length", "return", "episodes", "train_wall_s")


def run(steps: int, seeds: int, episodes: int, path: str) -> None:
    from benchmarks.harness.populations import append_rows, train_population
    from experiments.configs import ppo_gymnax
    rows = []
    for condition, randomize in CONDITIONS.items():
        with tempfile.TemporaryDirectory() as tmp:
            config = ppo_gymnax.get_config()
            config.env.randomize = randomize
            run_dir = os.path.join(tmp, condition)
            result, wall = train_population(config, seeds, steps, run_dir, checkpoint_keep=1)
            for m in range(seeds):
                scenarios = [a for length in LENGTHS
                             for a in ("--scenario", f"length=choice({length})")]
                out = os.path.join(tmp, f"eval-{m}.json")
                subprocess.run([sys.executable, "-m", "scripts.evaluate", run_dir,
                                "--member", str(m), "--episodes", str(episodes),
                                "--num_envs", "16", "--output", out, *scenarios],
                               check=True, capture_output=True)
                with open(out) as f:
                    report = json.load(f)
                for length, row in zip(LENGTHS, report["scenarios"]):
                    rows.append({"condition": condition, "seed": m,
                                 "env_steps": result.env_steps, "length": length,
                                 "return": row["mean"], "episodes": row["episodes"],
                                 "train_wall_s": round(wall, 1)})
            print(f"{condition}: trained in {wall:.0f} s, evaluated {seeds} seeds", flush=True)
    append_rows(path, FIELDS, rows)


def table(path: str) -> str:
    from rliable import library, metrics
    with open(path) as f:
        rows = list(csv.DictReader(f))
    lines = ["| trained on | pole length | IQM return over seeds [95% CI] | per seed |",
             "|---|---:|---|---|"]
    for condition, randomize in CONDITIONS.items():
        for length in LENGTHS:
            chosen = sorted((r for r in rows if r["condition"] == condition
                             and float(r["length"]) == length), key=lambda r: int(r["seed"]))
            if not chosen:
                continue
            scores = np.array([[float(r["return"])] for r in chosen])  # [seeds, 1 task]
            point, ci = library.get_interval_estimates(
                {"x": scores}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=2000)
            lo, hi = ci["x"][:, 0]
            label = "fixed 0.5" if not randomize else randomize.split("=", 1)[1]
            per_seed = ", ".join(f"{float(r['return']):.0f}" for r in chosen)
            lines.append(f"| {label} | {length:g} | {point['x'][0]:.1f} [{lo:.1f}, {hi:.1f}] | "
                         f"{per_seed} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--steps", type=int, default=500_000)
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--episodes", type=int, default=32)
    r.add_argument("--csv", default=CSV)
    t = sub.add_parser("table")
    t.add_argument("--csv", default=CSV)
    args = p.parse_args(argv)
    if args.command == "run":
        run(args.steps, args.seeds, args.episodes, args.csv)
    print(table(args.csv))


if __name__ == "__main__":
    main()
