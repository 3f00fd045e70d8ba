"""What the seed-population benchmarks share (benchmarks/action_masks.py, scenarios.py): one
condition trained as a population of seeds in one program (Anakin's `num_seeds`), and the
per-seed rows appended to the CSV their tables are recomputed from (curriculum.py too), and a
tool run whose failure shows what it printed."""
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
