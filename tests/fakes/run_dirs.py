"""Synthetic run directories for the plot tests (scripts/plot.py reads them as it reads real
runs: config.json, metrics.jsonl, summary.json, a sweep's sweep_run.json)."""
import json
from pathlib import Path

import numpy as np

METRIC = "episode/return_mean"


def write_run(path: Path, seed: int, final: float, env: str = "Pong-v5", lr: float = 1e-3,
              steps: int = 1000, points: int = 11, summary: bool = True, sweep: dict = None):
    """A run dir as experiments/wiring/run.py writes it: the return rises linearly from 0 to
    `final` over `steps` env steps (so at step k it is final * k / steps)."""
    path.mkdir(parents=True)
    config = {"seed": seed, "run_dir": str(path), "env": {"name": env},
              "agent": {"learning_rate": lr}, "wandb": {"name": f"s{seed}"}}
    (path / "config.json").write_text(json.dumps(config))
    with open(path / "metrics.jsonl", "w") as f:
        for k in np.linspace(0, steps, points):
            f.write(json.dumps({"step": int(k), "time": 1000.0 + k / 100,
                                METRIC: final * k / steps}) + "\n")
    if summary:
        (path / "summary.json").write_text(json.dumps({METRIC: final, "env_steps": steps}))
    if sweep is not None:
        (path / "sweep_run.json").write_text(json.dumps(sweep))
