"""PPO on pgx's tic-tac-toe against its random legal opponent, with and without the legal-action
mask (env.action_mask_key): the illegal-move rate and the win rate each seed reaches.

    python -m benchmarks.action_masks run [--steps N] [--seeds K] [--csv PATH]
    python -m benchmarks.action_masks table [--csv PATH]

`run` trains, per condition, K seeds as one population (num_seeds, one compiled program:
docs/anakin.md) of experiments/configs/ppo_gymnax.py as it is, on a random seat per game, and
appends one row per seed to the CSV: the last 100 training games' mean return, illegal-move
rate (`episode/illegal_move`, from pgx's `illegal_move:max`) and win rate (`episode/won`).
Without the mask the observation still holds the mask as an input entry (the torso sees it):
the policy must learn to use it. `table` recomputes the Markdown table of docs/howto_env.md
from the CSV: per budget and condition the mean over seeds with a 95% t-interval, and each
seed's value.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile

CSV = os.path.join(os.path.dirname(__file__), "..", "docs", "action_masks_tic_tac_toe.csv")
CONDITIONS = {"masked": "auto", "unmasked": ""}  # env.action_mask_key
FIELDS = ("condition", "seed", "env_steps", "return", "illegal_move", "won", "wall_s")
METRICS = {"return": "episode/return_mean", "illegal_move": "episode/illegal_move",
           "won": "episode/won"}


def run(steps: int, seeds: int, path: str) -> None:
    from benchmarks.harness.populations import append_rows, train_population
    from experiments.configs import ppo_gymnax
    rows = []
    for condition, key in CONDITIONS.items():
        with tempfile.TemporaryDirectory() as tmp:
            config = ppo_gymnax.get_config()
            config.env.name = "pgx:tic_tac_toe"
            config.env.action_mask_key = key
            config.env.episode_metrics = "illegal_move:max,won:max"
            result, wall = train_population(config, seeds, steps,
                                            os.path.join(tmp, condition))
            for m, member in enumerate(result.members):
                summary = member["episode_summary"]
                rows.append({"condition": condition, "seed": m, "env_steps": result.env_steps,
                             **{k: summary[v] for k, v in METRICS.items()},
                             "wall_s": round(wall, 1)})
    append_rows(path, FIELDS, rows)
    print(json.dumps(rows, indent=1))


def _interval(values: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95% t-interval) over seeds."""
    from scipy import stats
    import numpy as np
    v = np.asarray(values, float)
    if len(v) < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1)
                                  / np.sqrt(len(v)))


def table(path: str) -> str:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    head = ("| condition | seeds | env steps | return | illegal-move rate | win rate | "
            "per seed (return / illegal / won) |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---|"]
    budgets = sorted({int(r["env_steps"]) for r in rows})
    for steps, condition in ((s, c) for s in budgets for c in CONDITIONS):
        mine = [r for r in rows if r["condition"] == condition and int(r["env_steps"]) == steps]
        if not mine:
            continue
        cells = []
        for name in ("return", "illegal_move", "won"):
            mean, half = _interval([float(r[name]) for r in mine])
            cells.append(f"{mean:.3f} +- {half:.3f}")
        seeds = "; ".join(f"{float(r['return']):.2f} / {float(r['illegal_move']):.3f} / "
                          f"{float(r['won']):.2f}" for r in mine)
        lines.append(f"| {condition} | {len(mine)} | {int(mine[0]['env_steps']):,d} | "
                     + " | ".join(cells) + f" | {seeds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.action_masks",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train both conditions, append the per-seed rows")
    r.add_argument("--steps", type=int, default=200_000, help="env steps per seed")
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--csv", default=CSV)
    t = sub.add_parser("table", help="the Markdown table from the CSV")
    t.add_argument("--csv", default=CSV)
    args = p.parse_args(argv)
    if args.command == "run":
        run(args.steps, args.seeds, args.csv)
    print(table(args.csv))


if __name__ == "__main__":
    main()
