"""Learning curves from run directories: return vs env steps and vs wall clock, to a PNG.

    python scripts/plot.py runs/sweep-lr --output runs/sweep-lr/curves.png
    python scripts/plot.py runs/impala-CartPole-v1-s0-* runs/impala-CartPole-v1-s1-* \\
        --metric episode/return_mean --title "IMPALA CartPole"

Each argument is a run dir or a folder searched for run dirs (those with metrics.jsonl or
TensorBoard event files; metrics.jsonl is read when both exist). Runs are grouped into
settings: by the label a sweep wrote (scripts/sweep.py), else by the config.json fields that
differ between the runs (seed, run_dir and similar excluded), else one setting per dir. Each
setting is drawn as the mean over its seeds, with the min-max range over seeds shaded (see
`seed_band` for seeds of different lengths).
The wall-clock axis counts from the creation of the run's TensorBoard writer (before
compilation); a resumed run's downtime between sessions is included.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from scripts import _runs  # noqa: E402

AXES = {"step": "env steps", "time": "wall clock (minutes)"}


def group_curves(run_dirs: list[str], metric: str) -> dict[str, list[dict]]:
    """{setting label: [curve per seed]}, runs without the metric left out (with a note)."""
    labels = _runs.labels(run_dirs)
    groups: dict[str, list[dict]] = {}
    for run in run_dirs:
        curve = _runs.load_curve(run, metric)
        if curve is None:
            print(f"plot: {run} has no {metric!r} yet; left out", file=sys.stderr)
            continue
        groups.setdefault(labels[run], []).append(curve)
    return groups


def seed_band(curves: list[dict], x: str, points: int = 200) -> tuple[np.ndarray, ...]:
    """(grid, mean, min, max) over seeds, the curves interpolated on a common x grid.

    A seed enters at its first logged point and holds its last value after its end (a run
    that finished or stopped early keeps its final return), so seeds that started late (slow
    compile) or ended early do not cut the other curves short.
    """
    if len(curves) == 1:  # nothing to interpolate: the run's own points
        c = curves[0]
        return c[x], c["value"], c["value"], c["value"]
    grid = np.linspace(min(c[x][0] for c in curves), max(c[x][-1] for c in curves), points)
    ys = np.stack([np.interp(grid, c[x], c["value"], left=np.nan) for c in curves])
    return grid, np.nanmean(ys, 0), np.nanmin(ys, 0), np.nanmax(ys, 0)


def plot(groups: dict[str, list[dict]], metric: str, output: str, title: str = "",
         axes: tuple[str, ...] = ("step", "time")) -> str:
    import matplotlib
    matplotlib.use("Agg")  # files only; no display needed (CI, SSH)
    import matplotlib.pyplot as plt

    fig, subplots = plt.subplots(1, len(axes), figsize=(6.5 * len(axes), 4.5), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, x in zip(subplots[0], axes):
        for i, (label, curves) in enumerate(sorted(groups.items())):
            grid, mean, low, high = seed_band(curves, x)
            if x == "time":
                grid = grid / 60.0
            color = colors[i % len(colors)]
            ax.plot(grid, mean, color=color, label=f"{label} (n={len(curves)})")
            if len(curves) > 1:
                ax.fill_between(grid, low, high, color=color, alpha=0.2, linewidth=0)
        if x == "time":
            ax.set_xlim(left=0)  # from the run's start: the gap before the first point is compile
        ax.set_xlabel(AXES[x])
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    subplots[0][0].legend(fontsize=8, loc="best")
    fig.suptitle(title or f"{metric}: mean over seeds, min-max shaded")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("paths", nargs="+", help="run dirs, or folders holding run dirs")
    p.add_argument("--metric", default="episode/return_mean", help="scalar to plot")
    p.add_argument("--output", default="",
                   help="PNG path (default: <first path>/curves.png)")
    p.add_argument("--x", default="step,time", help="x axes: step, time or step,time")
    p.add_argument("--title", default="")
    args = p.parse_args(argv)
    axes = tuple(a.strip() for a in args.x.split(","))
    bad = [a for a in axes if a not in AXES]
    if bad:
        p.error(f"--x: unknown axis {bad[0]!r}; allowed: {', '.join(AXES)}")
    try:
        runs = _runs.find_runs(args.paths)
    except FileNotFoundError as e:
        p.error(str(e))
    if not runs:
        p.error(f"no run dirs (metrics.jsonl or events.out.tfevents.*) under {args.paths}")
    groups = group_curves(runs, args.metric)
    if not groups:
        p.error(f"none of the {len(runs)} runs logged {args.metric!r}")
    output = args.output or os.path.join(args.paths[0], "curves.png")
    plot(groups, args.metric, output, args.title, axes)
    print(f"plot: {sum(len(c) for c in groups.values())} runs in {len(groups)} setting(s) "
          f"-> {output}")
    return output


if __name__ == "__main__":
    main()
