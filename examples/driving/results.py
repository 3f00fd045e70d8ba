"""Recomputes the driving example's table of the built-in torso against the example's own
(README.md) from the per-seed results in results.csv:

    python -m examples.driving.results

Each row of results.csv is one run of `python -m examples.driving.train
--config=examples/driving/config.py:<variant> --config.seed=<seed>` (300k steps): the
100-episode mean return at its end (`episode/return_mean`), the best such mean during the run,
and the wall-clock seconds to the last update (its first run of each variant compiled from
scratch; the others loaded the persistent compilation cache).
"""
from __future__ import annotations

import csv
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def table(path: str = os.path.join(HERE, "results.csv")) -> str:
    """The markdown table: per variant, the mean and sample std over seeds, and each seed."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    lines = ["| variant (torso) | seeds | return_mean at 300k: mean (std) | per seed | "
             "best 100-episode mean: mean | wall s per run |",
             "|---|---|---|---|---|---|"]
    for variant in dict.fromkeys(r["variant"] for r in rows):
        runs = [r for r in rows if r["variant"] == variant]
        final = [float(r["return_mean"]) for r in runs]
        best = [float(r["return_best_mean"]) for r in runs]
        wall = [int(r["wall_s"]) for r in runs]
        lines.append(f"| `:{variant}` ({runs[0]['torso']}) | {len(runs)} | "
                     f"{statistics.mean(final):.2f} ({statistics.stdev(final):.2f}) | "
                     f"{' / '.join(f'{x:.2f}' for x in final)} | "
                     f"{statistics.mean(best):.2f} | {min(wall)}-{max(wall)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
