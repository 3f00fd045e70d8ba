"""Runs an experiment over a grid of config overrides and seeds; prints final returns per setting.

    python -m scripts.sweep --experiment experiments/impala_atari.py \\
        --config experiments/configs/impala_classic.py \\
        --grid agent.learning_rate=1e-3,5e-4 --seeds 0,1 --parallel 2 \\
        --out runs/sweep-lr --set total_env_steps=50000

Every setting (one value per --grid field; several --grid flags make their product) runs once
per seed, as `python <experiment> --config=<config> --config.x=y ...`, in its own run dir
`<out>/<field=value[__field=value]>/seed<k>/` holding config.json (written by the run),
sweep_run.json (setting, seed, command) and train.log (the run's output). Up to --parallel runs
go at once (1 = one after another). Values may contain commas inside brackets or quotes:
`--grid "network.mlp_hidden_sizes=(64,64),(256,256)"`.

Resumable: rerun the same command and finished runs (summary.json, not stopped by a signal) are
skipped, runs with a checkpoint continue from it (--config.resume), other unfinished ones start
again. Ctrl-C or SIGTERM asks every run to checkpoint and stop. At the end (or with --dry_run,
launching nothing) it prints a markdown table of the final `--metric` from each summary.json:
mean over seeds, a 95% t-interval, the IQM from 4 seeds up, and writes it to <out>/results.csv.

The same table for runs the sweep did not launch (a population's members, trained side by side
in one program with --config.num_seeds / --config.vary: <run_dir>/members/*; runs from
elsewhere), grouped into settings as scripts/plot.py groups them (the config.json fields that
differ, seed excluded):

    python -m scripts.sweep table runs/minatar-breakout [--metric M] [--csv results.csv]

As in a sweep, only finished runs count (summary.json, not stopped by a signal); the others are
listed under the table (a population paused by SIGTERM: resume it with --config.resume).
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from scripts.analysis import rundir
from scripts.analysis.final_scores import final_value, finished, table, write_csv


class SweepError(ValueError):
    """A bad command line (grid syntax, unknown field ...); main() reports it as a usage error."""


@dataclass
class Run:
    label: str                  # "agent.learning_rate=1e-3" (several fields joined by spaces)
    overrides: dict[str, str]   # config field -> value as typed on the command line
    seed: int
    run_dir: str


def split_values(text: str, token: str) -> list[str]:
    """Splits `text` at commas outside brackets and quotes; errors name `token`."""
    values, current, depth, quote = [], "", 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise SweepError(f"--grid token {token!r}: unbalanced {ch!r}")
        elif ch == "," and depth == 0:
            values.append(current)
            current = ""
            continue
        current += ch
    if depth or quote:
        raise SweepError(f"--grid token {token!r}: unclosed {'quote' if quote else 'bracket'}")
    values.append(current)
    if any(not v.strip() for v in values):
        raise SweepError(f"--grid token {token!r}: empty value (two commas, or a comma at an "
                         f"end); expected field=v1,v2,...")
    return [v.strip() for v in values]


def parse_assignment(token: str, flag: str) -> tuple[str, str]:
    key, eq, value = token.partition("=")
    key = key.strip().removeprefix("--config.").removeprefix("config.")
    if not eq or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", key) or not value.strip():
        raise SweepError(f"{flag} token {token!r}: expected field=value with a dotted config "
                         f"field, e.g. agent.learning_rate=1e-3" +
                         (",5e-4" if flag == "--grid" else ""))
    if key == "seed":
        raise SweepError(f"{flag} token {token!r}: give seeds with --seeds, not as a field")
    if key in ("run_dir", "resume"):
        raise SweepError(f"{flag} token {token!r}: the sweep sets {key} for each run itself")
    return key, value.strip()


def parse_grid(tokens: list[str]) -> list[tuple[str, list[str]]]:
    grid = []
    for token in tokens:
        key, text = parse_assignment(token, "--grid")
        grid.append((key, split_values(text, token)))
    return grid


def parse_seeds(text: str) -> list[int]:
    seeds = []
    for tok in text.split(","):
        if not re.fullmatch(r"\s*-?\d+\s*", tok):
            raise SweepError(f"--seeds token {tok!r}: not an integer (expected e.g. 0,1,2)")
        seeds.append(int(tok))
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"--seeds {text!r}: a seed is repeated")
    return seeds


def load_config(spec: str):
    """The experiment's base ConfigDict (`path[:variant]`), to check fields before launching."""
    path, _, variant = spec.partition(":")
    if not os.path.exists(path):
        raise SweepError(f"--config {spec!r}: no file {path!r}")
    module_spec = importlib.util.spec_from_file_location("_sweep_config", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.get_config(variant) if variant else module.get_config()


def check_fields(config, keys: list[tuple[str, str]], spec: str) -> None:
    """Fails naming the token whose field the config lacks (the run would fail the same way)."""
    for key, token in keys:
        node = config
        for i, part in enumerate(key.split(".")):
            if not hasattr(node, "keys") or part not in node:
                where = ".".join(key.split(".")[:i]) or "the config"
                raise SweepError(f"token {token!r}: {spec} has no field {key!r} ({part!r} is "
                                 f"not in {where})")
            node = node[part]


def dir_name(overrides: dict[str, str]) -> str:
    name = "__".join(f"{k}={v}" for k, v in overrides.items()) or "base"
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", name)  # shell- and filesystem-safe


def plan(grid: list[tuple[str, list[str]]], seeds: list[int], out: str) -> list[Run]:
    runs, dirs = [], {}
    for values in itertools.product(*[vals for _, vals in grid]):
        overrides = dict(zip([k for k, _ in grid], values))
        label = " ".join(f"{k}={v}" for k, v in overrides.items()) or "base"
        name = dir_name(overrides)
        if dirs.setdefault(name, label) != label:
            raise SweepError(f"settings {dirs[name]!r} and {label!r} map to the same directory "
                             f"{name!r}; write one of the values differently")
        runs += [Run(label, overrides, s, os.path.join(out, name, f"seed{s}")) for s in seeds]
    return runs


def command(args, run: Run, resume: bool) -> list[str]:
    cmd = [sys.executable, args.experiment, f"--config={args.config}",
           f"--config.run_dir={os.path.abspath(run.run_dir)}", f"--config.seed={run.seed}",
           f"--config.console_every_s={args.console_every_s}"]
    cmd += [f"--config.{k}={v}" for k, v in args.fixed.items()]
    cmd += [f"--config.{k}={v}" for k, v in run.overrides.items()]
    cmd += [f"--import={m}" for m in args.imports]  # user modules, for every run
    return cmd + ([f"--config.resume={os.path.abspath(run.run_dir)}"] if resume else [])


def has_checkpoint(run_dir: str) -> bool:
    # As podracer.checkpoint.list_steps: finished checkpoints are <update>/{state,meta}/.
    ckpt = os.path.join(run_dir, "checkpoints")
    return os.path.isdir(ckpt) and any(
        n.isdigit() and os.path.isdir(os.path.join(ckpt, n, "meta")) for n in os.listdir(ckpt))


def prepare(args, run: Run) -> list[str] | None:
    """The command for an unfinished run, after clearing a stale one; None when finished."""
    if finished(run.run_dir):
        return None
    resume = has_checkpoint(run.run_dir)
    if not resume and os.path.isdir(run.run_dir) and not args.dry_run:
        # No checkpoint to continue from: its metrics.jsonl would be appended to, so start over.
        print(f"  restarting {run.run_dir} from scratch (unfinished, no checkpoint)", flush=True)
        shutil.rmtree(run.run_dir)
    return command(args, run, resume)


def _tail(path: str, n: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except FileNotFoundError:
        return "(no log)\n"


def execute(args, todo: list[tuple[Run, list[str]]]) -> tuple[int, int]:
    """Runs the commands, --parallel at a time; returns (launched, failed)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # train.log fills as the run goes
    if args.parallel > 1:  # several runs on one GPU: JAX would give the first one 75% of it
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    running: dict[subprocess.Popen, tuple[Run, float]] = {}
    queue, launched, failed, done = list(todo), 0, 0, 0

    def forward_sigterm(signum, frame):  # pre-emption: stop the runs as Ctrl-C would
        raise KeyboardInterrupt

    main_thread = threading.current_thread() is threading.main_thread()  # signals need it
    old = signal.signal(signal.SIGTERM, forward_sigterm) if main_thread else None
    try:
        while queue or running:
            while queue and len(running) < args.parallel:
                run, cmd = queue.pop(0)
                os.makedirs(run.run_dir, exist_ok=True)
                with open(os.path.join(run.run_dir, rundir.SWEEP_RUN_FILE), "w") as f:
                    json.dump({"label": run.label, "overrides": run.overrides,
                               "seed": run.seed, "command": cmd}, f, indent=2)
                log = open(os.path.join(run.run_dir, "train.log"), "a")
                log.write(f"$ {' '.join(cmd)}\n")
                log.flush()
                # A session of its own: a Ctrl-C in the terminal reaches only the sweep, which
                # forwards exactly one SIGINT (a second one would skip the final checkpoint).
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
                log.close()
                launched += 1
                running[proc] = (run, time.time())
                resumed = " (resuming)" if "--config.resume=" in cmd[-1] else ""
                print(f"[launch {launched}/{len(todo)}] {run.label} seed={run.seed} -> "
                      f"{run.run_dir}{resumed}", flush=True)
            time.sleep(0.2)
            for proc in [p for p in running if p.poll() is not None]:
                run, start = running.pop(proc)
                done += 1
                log = os.path.join(run.run_dir, "train.log")
                if proc.returncode == 0 and os.path.exists(
                        os.path.join(run.run_dir, "summary.json")):
                    value = final_value(run.run_dir, args.metric)
                    print(f"[done {done}/{len(todo)}] {run.label} seed={run.seed}: "
                          f"{args.metric} {value:.2f} ({time.time() - start:.0f}s)", flush=True)
                else:
                    failed += 1
                    print(f"[FAILED {done}/{len(todo)}] {run.label} seed={run.seed}: exit "
                          f"{proc.returncode}; last lines of {log}:\n{_tail(log)}", flush=True)
    except KeyboardInterrupt:
        print(f"\ninterrupted: stopping {len(running)} run(s) (each checkpoints first); rerun "
              f"the same command to resume.", flush=True)
        for proc in running:
            proc.send_signal(signal.SIGINT)
        for proc in running:
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        raise
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, old)
    return launched, failed


def table_main(argv: list[str]) -> list[dict]:
    """`sweep.py table PATH...`: the table of run dirs found under PATH (a population's
    members/, runs from elsewhere), settings labelled as plot.py labels them."""
    p = argparse.ArgumentParser(
        prog="python -m scripts.sweep table",
        description="The final-score table of "
        "run dirs the sweep did not launch (a population's members).")
    p.add_argument("paths", nargs="+", help="run dirs, or folders holding run dirs (a "
                   "population's run dir)")
    p.add_argument("--metric", default="episode/return_mean", help="summary.json key")
    p.add_argument("--csv", default="", metavar="PATH", help="also write the rows to this CSV")
    args = p.parse_args(argv)
    try:
        dirs = rundir.find_runs(args.paths)
    except FileNotFoundError as e:
        p.error(str(e))
    if not dirs:
        p.error(f"no run dirs (metrics.jsonl or events.out.tfevents.*) under {args.paths}")
    labels = rundir.labels(dirs)
    runs = [Run(labels[d], {}, int((rundir.read_json(os.path.join(d, "config.json")) or {})
                                   .get("seed", 0)), d) for d in dirs]
    text, rows = table(runs, args.metric)
    print(text, flush=True)
    unfinished = [d for d in dirs if not finished(d)]
    if unfinished:
        print(f"\nnot counted, unfinished (no summary.json yet, or stopped by a signal: resume "
              f"with --config.resume): {', '.join(unfinished)}", flush=True)
    if args.csv:
        write_csv(args.csv, rows)
    return rows


def check_spec(args) -> None:
    """One --out holds one experiment: later calls may add grid values or seeds, nothing else."""
    path = os.path.join(args.out, "sweep.json")
    spec = {"experiment": args.experiment, "config": args.config, "set": args.fixed}
    old = rundir.read_json(path)
    if old is not None and {k: old.get(k) for k in spec} != spec:
        raise SweepError(f"{args.out} holds a sweep of {old}; this command is {spec}. Use "
                         f"another --out, or the same --experiment/--config/--set.")
    if not args.dry_run:
        os.makedirs(args.out, exist_ok=True)
        with open(path, "w") as f:
            json.dump(spec, f, indent=2)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m scripts.sweep",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--experiment", required=True, help="experiment script, e.g. "
                   "experiments/impala_atari.py")
    p.add_argument("--config", required=True, help="config file[:variant]")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="passed to every run: a module (dotted name, or a .py file) that "
                        "registers the runs' env, torso or agent; repeatable")
    p.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2",
                   help="values of one config field (repeat for a product)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override for every run (repeatable)")
    p.add_argument("--parallel", type=int, default=1, help="runs at once (1 = sequential)")
    p.add_argument("--out", required=True, help="sweep directory")
    p.add_argument("--metric", default="episode/return_mean", help="summary.json key")
    p.add_argument("--console_every_s", type=float, default=60.0,
                   help="progress-line period in each train.log")
    p.add_argument("--dry_run", action="store_true",
                   help="launch nothing: print the pending commands and the table so far")
    args = p.parse_args(argv)
    try:
        args.grid_spec = parse_grid(args.grid)
        args.fixed = dict(parse_assignment(t, "--set") for t in args.set)
        args.seed_list = parse_seeds(args.seeds)
        keys = [k for k, _ in args.grid_spec] + list(args.fixed)
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise SweepError(f"field(s) {sorted(dup)} given more than once in --grid/--set")
        if args.parallel < 1:
            raise SweepError(f"--parallel={args.parallel}: must be >= 1")
        if not os.path.exists(args.experiment):
            raise SweepError(f"--experiment {args.experiment!r}: no such file")
        tokens = dict(zip(keys, args.grid + args.set))
        check_fields(load_config(args.config), [(k, tokens[k]) for k in keys], args.config)
    except SweepError as e:
        p.error(str(e))
    return args


def main(argv=None) -> list[dict]:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["table"]:  # a table of existing run dirs, launching nothing
        return table_main(argv[1:])
    args = parse_args(argv)
    try:
        check_spec(args)
        runs = plan(args.grid_spec, args.seed_list, args.out)
    except SweepError as e:
        sys.exit(f"sweep.py: error: {e}")
    todo = [(r, cmd) for r in runs if (cmd := prepare(args, r)) is not None]
    print(f"sweep: {len(runs)} runs ({len(runs) // len(args.seed_list)} settings x "
          f"{len(args.seed_list)} seeds), {len(runs) - len(todo)} finished already, "
          f"{len(todo)} to run, {args.parallel} at a time", flush=True)
    launched = failed = 0
    if args.dry_run:
        for _, cmd in todo:
            print("  " + " ".join(cmd))
    else:
        try:
            launched, failed = execute(args, todo)
        except KeyboardInterrupt:
            sys.exit(130)
    text, rows = table(runs, args.metric, len(args.seed_list))
    print(f"\nsweep: launched {launched}, skipped {len(runs) - len(todo)} finished, failed "
          f"{failed}  ({args.out})\n\n{text}", flush=True)
    if not args.dry_run:
        write_csv(os.path.join(args.out, "results.csv"), rows)
    if failed:
        sys.exit(1)
    return rows


if __name__ == "__main__":
    main()
