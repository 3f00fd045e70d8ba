"""A Python simulator in the actor's process vs in worker processes (`env.workers`): steps/s of
the env alone and of the whole training run, and where an update's time goes.

    python -m benchmarks.env_workers [--workers 0,2] [--rounds 2] [--step_ms 1.0]
        [--steps 32768] [--config examples/driving/config.py:ppo] [--env SlowDriving-v0]
        [--import MODULE] [--set FIELD=VALUE ...]

The env: by default `SlowDriving-v0`, registered here: the driving example
(examples/driving/env.py) with a costlier step, `step_ms` of pure-Python work per env and step
that holds the GIL, as a Python simulator's physics does. `--env gymnasium:<id>` with
`--import` runs another (e.g. Python highway-env: `--import highway_env --env
gymnasium:highway-fast-v0 --config experiments/configs/ppo_classic.py`).

Two measures per setting of env.workers, in alternating rounds (the machine's load drifts):
  env_only   the config's env batch (num_envs / actor threads) stepped with random actions,
             built by sebulba.envs.make_env as the runtime builds it: the ceiling.
  train      experiments/train.py's run of the config (a fresh process per run): steps/s
             from metrics.jsonl after the first `--skip_updates` updates (compilation
             excluded), and the mean per update of the actor's env and inference seconds and
             the learner's step seconds (the runtime's time/* metrics).
The summary prints each setting's median and its ratio to the first setting's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

ENV_NAME = "SlowDriving-v0"


class SlowDriving:
    """The driving example's batch with `step_ms` of Python work per env per step (busy
    arithmetic, GIL held) after each step; everything else is DrivingEnv's."""

    def __init__(self, num_envs: int, seed: int, step_ms: float = 1.0, **options: Any) -> None:
        from examples.driving.env import DrivingEnv
        self._env = DrivingEnv(num_envs, seed, **options)
        self.num_envs, self.step_ms = num_envs, step_ms
        self.observation_space = self._env.observation_space
        self.action_space = self._env.action_space

    def reset(self):
        return self._env.reset()

    def step(self, action):
        ts = self._env.step(action)
        end = time.perf_counter() + self.step_ms * self.num_envs / 1e3
        x = 0.0
        while time.perf_counter() < end:
            for i in range(200):
                x += i * 1e-9
        return ts

    def close(self) -> None:
        self._env.close()


def make_slow_driving(num_envs: int, seed: int, env_config: Any = None) -> SlowDriving:
    options = dict(getattr(env_config, "options", None) or {})
    return SlowDriving(num_envs, seed, **options)


def _register() -> None:
    from sebulba import registry
    registry.register_env(ENV_NAME, make_slow_driving, overwrite=True)


_register()


def _config(args, workers: int):
    from benchmarks.harness.layout import set_field
    from experiments.wiring import user_modules
    from experiments.wiring.command_line import load_config_file
    user_modules.import_modules(["examples.driving", *args.imports])  # its env and torso
    config = load_config_file(args.config)
    config.env.name = args.env
    with config.unlocked():
        config.env.workers = workers
        if args.env == ENV_NAME:
            config.env.options.step_ms = args.step_ms
    config.total_env_steps = args.steps
    config.console_every_s = 1e9
    config.checkpoint_keep = 0
    config.eval_every_updates = 0
    for assignment in args.sets:
        set_field(config, assignment)
    return config


def measure_env(args, workers: int) -> dict:
    """Env batches alone: one batch of num_envs / actor threads, random actions."""
    import dataclasses
    from podracer.schema import read_section
    from sebulba import envs
    config = _config(args, workers)
    env_cfg = dataclasses.replace(read_section(envs.EnvConfig, config.env, "env"), workers=workers)
    threads = max(1, config.get("num_actor_threads", 1))
    n = config.num_envs // threads
    env = envs.make_env(env_cfg, n, 0)
    try:
        env.reset()
        actions = [envs.sample_actions(env.action_space, n) for _ in range(8)]
        for k in range(5):  # warm-up
            env.step(actions[k % 8])
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.env_seconds:
            env.step(actions[steps % 8])
            steps += 1
        wall = time.perf_counter() - start
    finally:
        env.close()
    return {"measure": "env_only", "workers": workers, "sps": steps * n / wall}


def measure_train(args, workers: int) -> dict:
    """One training run in this process (the parent starts a fresh process for it)."""
    from experiments import train
    config = _config(args, workers)
    with tempfile.TemporaryDirectory() as tmp:
        config.run_dir = os.path.join(tmp, "run")
        train.run(config)
        with open(os.path.join(tmp, "run", "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f if '"loss/' in line]
    k = max(1, args.skip_updates)
    if len(rows) <= k + 1:
        raise SystemExit(f"only {len(rows)} updates: raise --steps above {k + 2} updates.")
    a, z = rows[k - 1], rows[-1]
    timed = rows[k:]

    def mean(key: str) -> float:
        values = [r[key] for r in timed if key in r]
        return float(np.mean(values)) if values else float("nan")

    return {"measure": "train", "workers": workers,
            "sps": (z["step"] - a["step"]) / (z["time"] - a["time"]),
            "update_s": (z["time"] - a["time"]) / (len(rows) - k),
            "actor_env_s": mean("time/actor/env_s"),
            "actor_inference_s": mean("time/actor/inference_s"),
            "learner_step_s": mean("time/learner_step_s"),
            "learner_wait_data_s": mean("time/learner_wait_data_s")}


def _child(args, measure: str, workers: int) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.env_workers", "--child", measure,
           "--child_workers", str(workers), *_passed_on(args)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _passed_on(args) -> list[str]:
    out = ["--step_ms", str(args.step_ms), "--steps", str(args.steps), "--config", args.config,
           "--env", args.env, "--skip_updates", str(args.skip_updates),
           "--env_seconds", str(args.env_seconds)]
    for name in args.imports:
        out += ["--import", name]
    for assignment in args.sets:
        out += ["--set", assignment]
    return out


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="0,2", help="env.workers settings, comma-separated")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--measures", default="env_only,train")
    p.add_argument("--step_ms", type=float, default=1.0,
                   help="SlowDriving-v0: Python work per env step, ms")
    p.add_argument("--steps", type=int, default=32_768, help="env steps per training run")
    p.add_argument("--skip_updates", type=int, default=3)
    p.add_argument("--env_seconds", type=float, default=8.0)
    p.add_argument("--config", default="examples/driving/config.py:ppo")
    p.add_argument("--env", default=ENV_NAME)
    p.add_argument("--import", dest="imports", action="append", default=[])
    p.add_argument("--set", dest="sets", action="append", default=[])
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    p.add_argument("--child_workers", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        run = measure_env if args.child == "env_only" else measure_train
        print(json.dumps(run(args, args.child_workers)), flush=True)
        return []
    settings = [int(w) for w in args.workers.split(",")]
    measures = args.measures.split(",")
    print(f"# {args.env} ({args.config}), step_ms={args.step_ms}, {os.cpu_count()} cores; "
          f"settings env.workers={settings}, {args.rounds} round(s)", flush=True)
    results: list[dict] = []
    for r in range(args.rounds):
        for measure in measures:
            for w in settings:
                row = {"round": r, **_child(args, measure, w)}
                results.append(row)
                print(json.dumps(row), flush=True)
    print("\n| measure | env.workers | steps/s (median) | ratio to workers="
          f"{settings[0]} | rounds |")
    print("|---|---|---|---|---|")
    for measure in measures:
        base = None
        for w in settings:
            sps = [x["sps"] for x in results if x["measure"] == measure and x["workers"] == w]
            med = statistics.median(sps)
            base = med if base is None else base
            print(f"| {measure} | {w} | {med:,.0f} | {med / base:.2f}x | "
                  f"{', '.join(f'{s:,.0f}' for s in sps)} |")
    return results


if __name__ == "__main__":
    main()
