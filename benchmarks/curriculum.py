"""A curriculum on the driving example's traffic: PPO trained on dense traffic from the start,
and on a schedule that starts sparse and tightens to it, judged greedily on the dense traffic.

    python -m benchmarks.curriculum run [--seeds 0 1 2 3 4] [--conditions dense curriculum]
    python -m benchmarks.curriculum table
    python -m benchmarks.curriculum plot     # the greedy evaluations during training, a PNG

The task: `Driving-v0` (examples/driving/env.py) with `examples/driving/config.py:ppo` as it
is (32 envs x 32 steps, 300k env steps, Sebulba), the parked cars' `car_gap` (the shortest
distance between consecutive cars; the longest is twice it) drawn at every reset:
- `dense`: `car_gap=uniform(2.5, 4.0)` from the first step (the example's default is 6.0);
- `curriculum`: `car_gap=uniform(8.0, 12.0) -> uniform(2.5, 4.0) over 150000 env_steps`, sparse
  traffic tightening linearly to the dense range over the first half of the run, then dense.

`run` trains each condition and seed in turn (Sebulba trains one seed per process), each with
a greedy evaluation of 32 games on the dense range every 30 updates (`eval_every_updates`: an
evaluation plays a schedule's end), then plays the final policy greedily with
`python -m scripts.evaluate <run> --episodes 64` on the dense range (the run's own env at the
schedule's end) and on the example's default traffic (`--scenario car_gap=choice(6.0)`), on the
evaluation seeds. Each finished run appends its rows to docs/curriculum_driving.csv (return and
crash rate per evaluated traffic) and docs/curriculum_driving_curves.csv (its periodic
evaluations), so a stopped `run` keeps the runs it finished and skips them when run again.
`table` recomputes the table of docs/howto_env.md: per condition and traffic, the IQM over
seeds of the mean return and of the crash rate, with 95% stratified-bootstrap intervals over
seeds (scripts/analysis/scores.py: rliable, 2,000 resamples, bootstrap seed 0, as every table
of the repo); `plot` draws the periodic evaluations (IQM over seeds with its 95% interval
shaded, `iqm_band`, as scripts/plot.py draws training curves).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time

from benchmarks.harness.populations import append_rows, draw_seed_curves, run_quietly, save_figure
from scripts.analysis.scores import iqm_text

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOCS = os.path.join(ROOT, "docs")
CSV = os.path.join(DOCS, "curriculum_driving.csv")
CURVES = os.path.join(DOCS, "curriculum_driving_curves.csv")
FIELDS = ("condition", "seed", "env_steps", "traffic", "return", "crash_rate", "episodes",
          "train_wall_s")
CURVE_FIELDS = ("condition", "seed", "env_steps", "return_mean", "crash_rate")

DENSE = "car_gap=uniform(2.5, 4.0)"
CONDITIONS = {
    "dense": DENSE,
    "curriculum": "car_gap=uniform(8.0, 12.0) -> uniform(2.5, 4.0) over 150000 env_steps",
}
# The traffic each final policy is judged on: the run's own env (a schedule's end: dense) and
# the example's default.
TRAFFIC = {"dense": None, "default": "car_gap=choice(6.0)"}
EVAL_EVERY, EVAL_GAMES, FINAL_GAMES = 30, 32, 64


def _crash(metrics: dict) -> float:
    """The crash rate among an evaluation's episode-metric means (`crashed:max`)."""
    (value,) = [v for k, v in metrics.items() if k.endswith("crashed")]
    return float(value)


def train_and_judge(condition: str, seed: int, runs: str, steps: int | None = None,
                    eval_every: int = EVAL_EVERY, episodes: int = FINAL_GAMES,
                    ) -> tuple[list[dict], list[dict]]:
    """One run of `condition` and `seed` (`steps`: the config's 300k when None): its
    evaluation rows and its curve rows."""
    run_dir = os.path.join(runs, f"{condition}-s{seed}")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "examples.driving.train",
                    "--config=examples/driving/config.py:ppo", f"--config.seed={seed}",
                    f"--config.env.randomize={CONDITIONS[condition]}",
                    f"--config.run_dir={run_dir}", f"--config.eval_every_updates={eval_every}",
                    f"--config.eval_episodes={EVAL_GAMES}", "--config.eval_num_envs=16",
                    *([f"--config.total_env_steps={steps}"] if steps else [])],
                   check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    out = os.path.join(run_dir, "final-eval.json")
    run_quietly([sys.executable, "-m", "scripts.evaluate", run_dir, "--import",
                 "examples.driving", "--episodes", str(episodes), "--num_envs", "16",
                 "--output", out, "--scenario", TRAFFIC["default"]], cwd=ROOT)
    with open(out) as f:
        report = json.load(f)
    rows = []
    for traffic, result in (("dense", report), ("default", report["scenarios"][0])):
        rows.append({"condition": condition, "seed": seed, "env_steps": report["env_steps"],
                     "traffic": traffic, "return": round(result["mean"], 3),
                     "crash_rate": round(_crash(result["episode_metrics"]), 4),
                     "episodes": result["episodes"], "train_wall_s": round(wall, 1)})
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        logged = [json.loads(line) for line in f if line.strip()]
    curves = [{"condition": condition, "seed": seed, "env_steps": r["step"],
               "return_mean": round(r["eval/return_mean"], 3),
               "crash_rate": round(_crash({k: v for k, v in r.items()
                                           if k.startswith("eval/")}), 4)}
              for r in logged if "eval/return_mean" in r]
    return rows, curves


def run(seeds: list[int], conditions: list[str], runs: str, csv_path: str,
        curves_path: str, **kwargs) -> None:
    """Each condition and seed not in `csv_path` yet, in turn (`kwargs`: train_and_judge's)."""
    done = {(r["condition"], int(r["seed"])) for r in _read(csv_path)}
    for condition in conditions:
        for seed in seeds:
            if (condition, seed) in done:
                print(f"{condition} seed {seed}: in {csv_path} already, skipped", flush=True)
                continue
            rows, curves = train_and_judge(condition, seed, runs, **kwargs)
            append_rows(csv_path, FIELDS, rows)
            append_rows(curves_path, CURVE_FIELDS, curves)
            print(f"{condition} seed {seed}: " + ", ".join(
                f"{r['traffic']} return {r['return']:.2f} crash {r['crash_rate']:.2f}"
                for r in rows) + f" ({rows[0]['train_wall_s']:.0f} s)", flush=True)


def _read(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def table(csv_path: str = CSV) -> str:
    rows = _read(csv_path)
    lines = ["| trained on | judged on | seeds | IQM return [95% CI] | IQM crash rate [95% CI] "
             "| return per seed | crash rate per seed |", "|---|---|---:|---|---|---|---|"]
    for condition, randomize in CONDITIONS.items():
        for traffic in TRAFFIC:
            chosen = sorted((r for r in rows if r["condition"] == condition
                             and r["traffic"] == traffic), key=lambda r: int(r["seed"]))
            if not chosen:
                continue
            returns = [float(r["return"]) for r in chosen]
            crashes = [float(r["crash_rate"]) for r in chosen]
            judged = f"`{DENSE}`" if traffic == "dense" else "`car_gap=6.0` (default)"
            lines.append(f"| {condition}: `{randomize}` | {judged} | {len(chosen)} | "
                         f"{iqm_text([returns])} | {iqm_text([crashes])} | "
                         f"{', '.join(f'{v:.1f}' for v in returns)} | "
                         f"{', '.join(f'{v:.2f}' for v in crashes)} |")
    return "\n".join(lines)


def plot(curves_path: str, output: str) -> None:
    """The periodic greedy evaluations on dense traffic: per condition, the IQM over seeds on
    a grid of env steps every seed reached, its 95% stratified-bootstrap interval shaded
    (`iqm_band`); return and crash rate side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = _read(curves_path)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition]
        if mine:
            for ax, column in zip(axes, ("return_mean", "crash_rate")):
                draw_seed_curves(ax, mine, column, condition)
    for ax, label in zip(axes, ("greedy return", "greedy crash rate")):
        ax.set_xlabel("env steps")
        ax.set_ylabel(f"{label} (IQM over seeds, 95% CI)")
        ax.legend()
    fig.suptitle(f"PPO on Driving-v0, judged on {DENSE}: {EVAL_GAMES} greedy games per "
                 f"evaluation")
    save_figure(fig, output)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("run", "table", "plot"):
        s = sub.add_parser(name)
        s.add_argument("--csv", default=CSV, help="the evaluation rows (the curves beside it, "
                       "*_curves.csv)")
        if name == "run":
            s.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
            s.add_argument("--conditions", nargs="+", choices=tuple(CONDITIONS),
                           default=list(CONDITIONS))
            s.add_argument("--runs", default=os.path.join(ROOT, "runs", "curriculum"),
                           help="where the runs' dirs go")
            s.add_argument("--steps", type=int, default=None, help="default: the config's")
            s.add_argument("--eval_every", type=int, default=EVAL_EVERY)
            s.add_argument("--episodes", type=int, default=FINAL_GAMES)
        if name == "plot":
            s.add_argument("--output", default=None, help="default: the curves CSV's .png")
    args = p.parse_args(argv)
    curves = args.csv.replace(".csv", "_curves.csv")
    if args.command == "run":
        run(args.seeds, args.conditions, args.runs, args.csv, curves, steps=args.steps,
            eval_every=args.eval_every, episodes=args.episodes)
    if args.command == "plot":
        plot(curves, args.output or curves.replace(".csv", ".png"))
        return
    print(table(args.csv))


if __name__ == "__main__":
    main()
