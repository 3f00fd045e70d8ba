"""Latency and actions per second of an exported policy (scripts/export.py, run through the
copyable loader: jax, and onnxruntime where the ONNX extra is installed) beside the library's
own greedy player of the same checkpoint, in one run.

    python -m benchmarks.export_latency RUN_DIR [--batches 1,64] [--seconds 3]
    python -m benchmarks.export_latency --config experiments/configs/impala_atari.py:cpu

The export runs as a user runs it (`python -m scripts.export` in a subprocess, with `--onnx`
when jax2onnx and onnxruntime are installed: requirements-onnx.txt) and its loader is imported
from the folder it wrote, once per runtime (onnxruntime with its default session options);
the library's player is the one scripts/evaluate.py plays (agents/evaluation.py), rebuilt
here from the checkpoint's config (a run of one agent; a population member: export it with
`--member` and time that folder's loader only). With
`--config` (no run dir) the config's freshly initialised agent is saved as a checkpoint
in a temporary run dir: the parameters' values do not change the time. The observations are
the env's first ones, tiled to each batch size. Each call's time includes handing the
observation in and the action back as numpy (what a control loop pays); the two policies are
timed in alternating rounds, and the median call of each is reported with actions per second
(batch / median). Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np


def _untrained_run(spec: str, run_dir: str) -> None:
    """Saves the freshly initialised agent of config `spec` (path[:variant]) in `run_dir`."""
    from experiments import wiring
    from experiments.wiring.command_line import load_config_file
    from podracer import checkpoint
    from sebulba import envs
    config = load_config_file(spec)
    config.run_dir = run_dir
    sections = wiring.read(config, devices=False, env_id=False)
    probe = envs.make_env(sections.env, 1, 0)
    obs = probe.reset()
    _, _, agent = wiring.build_from_config(sections, probe.action_space, num_updates=1,
                                           observation_space=probe.observation_space)
    probe.close()
    saver = checkpoint.Checkpointer(os.path.join(run_dir, "checkpoints"),
                                    metadata={"experiment": sections.spec.name,
                                              "config": json.loads(config.to_json())})
    saver.close(checkpoint.Progress(agent.init(jax.random.key(0), obs), 0, 0))


def _exported(run_dir: str, folder: str) -> dict:
    """{runtime: the export's policy}, as a user gets it: the command line, then its copied
    loader; onnxruntime beside jax where the ONNX extra is installed."""
    onnx = all(importlib.util.find_spec(m) for m in ("jax2onnx", "onnxruntime"))
    subprocess.run([sys.executable, "-m", "scripts.export", run_dir, "--output", folder,
                    "--platforms", "cpu", *(["--onnx"] if onnx else [])], check=True, cwd=ROOT)
    spec = importlib.util.spec_from_file_location(
        "load_policy", os.path.join(folder, "load_policy.py"))
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    return {runtime: loader.load(folder, runtime=runtime)
            for runtime in ("jax", *(["onnxruntime"] if onnx else []))}


def _library(run_dir: str):
    """(the library's greedy player of the run's checkpoint, the env's first observation)."""
    from agents import evaluation as players
    from experiments import wiring
    from podracer import checkpoint
    ckpt = checkpoint.resolve(run_dir)
    config = checkpoint.config_from_metadata(checkpoint.load_metadata(ckpt))
    config.resume, config.run_dir = "", tempfile.gettempdir()
    sections = wiring.read(config, devices=False, env_id=False)
    probe = wiring.host_envs(sections.env, whole_games=True)(1, 0)
    obs, spaces = probe.reset(), (probe.observation_space, probe.action_space)
    probe.close()
    _, network, agent = wiring.build_from_config(sections, spaces[1], num_updates=1,
                                                 observation_space=spaces[0])
    template = jax.eval_shape(agent.init, jax.random.key(0), obs)
    ap = agent.actor_params(checkpoint.restore(ckpt, template).learner_state)
    return players.eval_player("greedy", network, agent, ap, obs), ap, obs


def measure(run_dir: str, batches: list[int], seconds: float) -> list[dict]:
    player, ap, first = _library(run_dir)
    exported = _exported(run_dir, os.path.join(run_dir, "export", "benchmark"))
    rows = []
    for batch in batches:
        obs = jax.tree.map(lambda x: np.repeat(np.asarray(x), batch, axis=0), first)
        actor = player.actor(ap, batch)
        key = jax.random.key(0)
        calls = {f"exported, {runtime} (load_policy.py)":
                 functools.partial(_act, policy, obs, policy.initial_state(batch))
                 for runtime, policy in exported.items()}
        calls["library (scripts/evaluate.py's player)"] = functools.partial(
            actor.act, obs, key)
        times: dict[str, list[float]] = {name: [] for name in calls}
        for fn in calls.values():  # compile and warm up
            for _ in range(3):
                jax.block_until_ready(fn())
        end = time.perf_counter() + seconds * len(calls)
        while time.perf_counter() < end:
            for name, fn in calls.items():
                for _ in range(20):
                    t0 = time.perf_counter()
                    jax.tree.map(np.asarray, fn())
                    times[name].append(time.perf_counter() - t0)
        for name, values in times.items():
            median = statistics.median(values)
            rows.append({"policy": name, "batch": batch, "calls": len(values),
                         "median_ms": median * 1e3, "actions_per_s": batch / median})
    return rows


def _act(policy, obs, state):
    return policy(obs, state)[0]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def table(rows: list[dict]) -> str:
    lines = ["| policy | batch | median call | actions/s | calls timed |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['policy']} | {r['batch']} | {r['median_ms']:.3f} ms | "
              f"{r['actions_per_s']:,.0f} | {r['calls']:,d} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.export_latency",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", nargs="?", default="", help="a run dir with a checkpoint")
    p.add_argument("--config", default="", help="path[:variant]: an untrained agent of it")
    p.add_argument("--batches", default="1,64")
    p.add_argument("--seconds", type=float, default=3.0, help="timing per policy and batch")
    args = p.parse_args(argv)
    if bool(args.run_dir) == bool(args.config):
        p.error("give a run dir or --config, not both")
    batches = [int(b) for b in args.batches.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run_dir
        if args.config:
            run_dir = os.path.join(tmp, "run")
            _untrained_run(args.config, run_dir)
        rows = measure(run_dir, batches, args.seconds)
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
