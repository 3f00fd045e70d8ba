"""What the seed-population benchmarks share (benchmarks/action_masks.py, scenarios.py): one
condition trained as a population of seeds in one program (Anakin's `num_seeds`), and the
per-seed rows appended to the CSV their tables are recomputed from (curriculum.py too), a
tool run whose failure shows what it printed, and the curves over seeds their plots draw."""
from __future__ import annotations

import csv
import os
import subprocess
import time
from typing import Any, Sequence


def train_population(config: Any, seeds: int, steps: int, run_dir: str,
                     checkpoint_keep: int = 0) -> tuple[Any, float]:
    """Trains `config` as `seeds` members for `steps` env steps each in `run_dir`; returns
    (the run's result, wall seconds)."""
    from experiments import train
    config.num_seeds = seeds
    config.total_env_steps = steps
    config.run_dir = run_dir
    config.checkpoint_keep = checkpoint_keep
    config.console_every_s = 30.0
    start = time.perf_counter()
    result = train.run(config)
    return result, time.perf_counter() - start


def append_rows(path: str, fields: Sequence[str], rows: list[dict]) -> None:
    """Appends `rows` to the CSV at `path`, writing the header when the file is new."""
    exists = os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fields)
        if not exists:
            writer.writeheader()
        writer.writerows(rows)


def run_quietly(argv: list[str], cwd: str | None = None) -> None:
    """Runs a tool (`python -m scripts.evaluate ...`) with its output captured; when it fails,
    stops with the command and the end of what it printed, not only its exit status."""
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed with status {proc.returncode}:\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


def draw_seed_curves(ax: Any, rows: list[dict], column: str, label: str) -> None:
    """One condition's curves on `ax`: `rows` (CSV rows with seed, env_steps and `column`),
    the IQM over seeds on a grid of env steps every seed reached, its 95% stratified-bootstrap
    interval shaded (`iqm_band`, as scripts/plot.py draws training curves)."""
    import numpy as np
    from scripts.analysis.scores import iqm_band
    seeds = sorted({int(r["seed"]) for r in rows})
    curves = [{"env_steps": np.array([float(r["env_steps"]) for r in mine]),
               "value": np.array([float(r[column]) for r in mine])}
              for mine in ([r for r in rows if int(r["seed"]) == s] for s in seeds)]
    grid, iqm, low, high = iqm_band(curves, "env_steps")
    ax.plot(grid, iqm, label=f"{label} ({len(seeds)} seeds)")
    if low is not None:
        ax.fill_between(grid, low, high, alpha=0.2)


def save_figure(fig: Any, output: str) -> None:
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    print(f"wrote {output}")
