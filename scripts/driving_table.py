"""The driving tables of docs/driving.md from per-seed data committed in the repository.

    python -m scripts.driving_table export runs/highway_fast_ppo/s* --commit <sha> \\
        [--csv docs/driving_ppo.csv]
    python -m scripts.driving_table table [--csv docs/driving_ppo.csv]
    python -m scripts.driving_table baselines [--task Racetrack-v0] [--episodes 1000]

`export` reads single-seed run dirs (Sebulba runs one seed per process) of the highway family
and writes, per task, seed and evaluation the run logged (`eval/*`: `eval_episodes` whole games
of the run's `eval_policy`, greedy or sample; a run with evaluations ends with one of its final
policy): the mean return, the crash rate (`eval/crashed`, the share of games that ended in a
crash, from `env.episode_metrics="crashed:max"`), the success rate where the env reports one
(`eval/is_success`, Parking), the mean speed and steps per game; beside them the training view
at that update (`episode/*`: the last 100 training games, played by the sampling policy) and
the training seconds; the commit the runs were made at goes with each row. The rows of the
tasks it reads replace those in the CSV; the others are kept.
`table` recomputes from the CSV alone: per task and evaluation step the IQM over seeds with
its 95% stratified-bootstrap interval (rliable, 2,000 resamples, bootstrap seed 0) of each
column, then per task the min-max of the last step's and the median training time.
`baselines` plays the policies a learned one must beat: a uniformly random one and each
constant action (highway-env's meta-actions LANE_LEFT, IDLE, LANE_RIGHT, FASTER, SLOWER; the
zero action of a continuous task: steering straight, standing still), the first game of each
of `--episodes` envs (EnvPool seeds 0..episodes-1 from `--seed`), with the mean return and its
standard error, the crash rate, the success rate where the env reports one, the mean speed and
the steps per game.
tests/slow/scripts/test_driving_tables.py checks the committed CSV against docs/driving.md.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from scripts.analysis import seed_csv

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
CSV = os.path.join(ROOT, "docs", "driving_ppo.csv")
TASKS = ("HighwayFast-v0", "Highway-v0", "Racetrack-v0", "Parking-v0")
# CSV column <- metric (eval: the evaluation; train: the last 100 training games).
COLUMNS = {"eval_return": "eval/return_mean", "eval_crash_rate": "eval/crashed",
           "eval_success_rate": "eval/is_success", "eval_speed": "eval/speed",
           "eval_length": "eval/length_mean",
           "train_return": "episode/return_mean", "train_crash_rate": "episode/crashed",
           "train_success_rate": "episode/is_success"}
FIELDS = ("task", "seed", "step", "eval_policy", *COLUMNS, "train_s", "commit")
HEADERS = {"eval_return": "eval: return", "eval_crash_rate": "crash rate",
           "eval_success_rate": "success rate", "eval_speed": "speed (m/s)",
           "eval_length": "steps per game", "train_return": "training: return",
           "train_crash_rate": "crash rate", "train_success_rate": "success rate"}


def export(run_dirs: list[str], path: str, commit: str) -> list[dict]:
    """Rows of each run of `run_dirs` at each of its evaluations, merged into the CSV at
    `path`."""
    from scripts.analysis import rundir
    rows = []
    for run in run_dirs:
        if not os.path.isdir(run):
            raise SystemExit(f"driving_table: {run!r} is not a run directory (one with "
                             f"config.json and metrics.jsonl).")
        config = rundir.read_json(os.path.join(run, "config.json")) or {}
        task, seed = config.get("env", {}).get("name", ""), config.get("seed")
        if task not in TASKS or seed is None:
            raise SystemExit(f"driving_table: {run}: env {task!r}, seed {seed!r}; a run of "
                             f"one of {', '.join(TASKS)} with a seed is expected.")
        curves = {column: rundir.load_curve(run, metric) for column, metric in COLUMNS.items()}
        evaluations = curves["eval_return"]
        if evaluations is None:
            raise SystemExit(f"driving_table: {run} logged no evaluation (eval/return_mean): "
                             f"run it with --config.eval_every_updates > 0.")
        if curves["eval_crash_rate"] is None:
            raise SystemExit(f"driving_table: {run} logged no crash rate: run it with "
                             f"--config.env.episode_metrics=crashed:max.")
        train = curves["train_return"]
        for step in evaluations["step"]:
            row = {"task": task, "seed": int(seed), "step": int(step), "commit": commit,
                   "eval_policy": config.get("eval_policy", "greedy")}
            for column, curve in curves.items():
                value = (None if curve is None else
                         rundir.curve_value_at(curve, step) if column.startswith("train")
                         else float(curve["value"][curve["step"] == step][-1]))
                row[column] = "" if value is None else round(value, 4)
            at = np.searchsorted(train["step"], step, side="right") - 1
            row["train_s"] = round(float(train["time"][at]), 1)
            rows.append(row)
    seed_csv.merge(path, rows, FIELDS, "task",
                   lambda r: (TASKS.index(r["task"]), int(r["seed"]), int(r["step"])))
    return rows


def read(path: str) -> list[dict]:
    return seed_csv.read(path)


def values(rows: list[dict], task: str, step: int, column: str) -> np.ndarray:
    """The task's per-seed values of `column` at `step` (seed order; seeds without it left
    out)."""
    picked = sorted((int(r["seed"]), float(r[column])) for r in rows
                    if r["task"] == task and int(r["step"]) == step and r[column] != "")
    return np.asarray([v for _, v in picked])


def table(rows: list[dict]) -> str:
    """The Markdown table of each task in `rows`."""
    from scripts.analysis.scores import iqm_text
    out = []
    for task in (t for t in TASKS if any(r["task"] == t for r in rows)):
        mine = [r for r in rows if r["task"] == task]
        steps = sorted({int(r["step"]) for r in mine})
        shown = [c for c in COLUMNS if any(r[c] != "" for r in mine)]
        policies = " and ".join(sorted({r["eval_policy"] for r in mine}))
        out += [f"{task}, evaluation by the {policies} policy, IQM over seeds [95% CI]:", "",
                "| env steps | seeds | " + " | ".join(HEADERS[c] for c in shown) + " |",
                "|---:|---:|" + "---:|" * len(shown)]
        for step in steps:
            cells = [iqm_text([values(mine, task, step, c)]) for c in shown]
            seeds = len(values(mine, task, step, "eval_return"))
            out.append(f"| {step:,} | {seeds} | " + " | ".join(cells) + " |")
        last = steps[-1]
        spans = ", ".join(f"{HEADERS[c]} {v.min():.2f} to {v.max():.2f}" for c in shown
                          for v in [values(mine, task, last, c)])
        seconds = values(mine, task, last, "train_s")
        out += ["", f"At {last:,} steps, min-max over seeds: {spans}; training time per seed "
                f"median {np.median(seconds):.0f} s (min {seconds.min():.0f}, max "
                f"{seconds.max():.0f}).", ""]
    return "\n".join(out).rstrip("\n")


META_ACTIONS = ("LANE_LEFT", "IDLE", "LANE_RIGHT", "FASTER", "SLOWER")


def _policies(space, rng: np.random.Generator, episodes: int) -> dict:
    """name -> (a batch of actions per step): the uniformly random policy and the constant
    ones (each discrete action; the zero action of a Box, e.g. steering straight)."""
    if hasattr(space, "n"):
        n = int(space.n)
        names = META_ACTIONS if n == len(META_ACTIONS) else tuple(map(str, range(n)))
        policies = {"uniformly random": lambda: rng.integers(0, n, episodes)}
        for action in range(n):
            policies[f"always {names[action]}"] = (
                lambda a=action: np.full(episodes, a))
        return policies
    low, high = np.broadcast_to(space.low, space.shape), np.broadcast_to(space.high, space.shape)
    return {"uniformly random": lambda: rng.uniform(low, high, (episodes, *space.shape)
                                                    ).astype(space.dtype),
            "always zero": lambda: np.zeros((episodes, *space.shape), space.dtype)}


def first_games(env, act, episodes: int, success: bool = False) -> dict:
    """Plays the first game of each of the `episodes` envs of a vector env whose finished envs
    reset on their next step (EnvPool's and gymnasium's), under `act(obs) -> actions`, and
    closes it. Per game: the return, the steps, whether it crashed, the sum of its steps'
    speeds and (`success`) whether it succeeded at some step."""
    obs, _ = env.reset()
    games = {"return": np.zeros(episodes), "length": np.zeros(episodes),
             "crashed": np.zeros(episodes, bool), "speed_sum": np.zeros(episodes)}
    if success:
        games["is_success"] = np.zeros(episodes, bool)
    done = np.zeros(episodes, bool)
    while not done.all():
        obs, reward, terminated, truncated, info = env.step(act(obs))
        live = ~done  # a finished env resets on its next step: not counted
        games["return"] += np.where(live, reward, 0.0)
        games["length"] += live
        games["crashed"] |= live & np.asarray(info["crashed"], bool)
        if success:
            games["is_success"] |= live & np.asarray(info["is_success"], bool)
        games["speed_sum"] += np.where(live, np.asarray(info["speed"], float), 0.0)
        done |= np.asarray(terminated, bool) | np.asarray(truncated, bool)
    env.close()
    return games


def baselines(task: str, episodes: int, seed: int = 0) -> str:
    """A Markdown table of the uniformly random and the constant policies on `task`: the
    first game of each of `episodes` envs, the same games for each policy (the envs made
    afresh with the same seeds)."""
    import envpool
    probe = envpool.make_gymnasium(task, num_envs=1, seed=seed)
    success, space = "is_success" in probe.reset()[1], probe.action_space
    probe.close()
    out = [f"{task}, the first game of each of {episodes} envs:", "",
           "| policy | return (mean ± s.e.) | crash rate | " + ("success rate | " * success)
           + "speed (m/s) | steps per game |", "|---|---:|---:|" + "---:|" * (2 + success)]
    for name, act in _policies(space, np.random.default_rng(seed), episodes).items():
        games = first_games(envpool.make_gymnasium(task, num_envs=episodes, seed=seed),
                            lambda obs: act(), episodes, success)
        ret, length = games["return"], games["length"]
        out.append(f"| {name} | {ret.mean():.2f} ± {ret.std(ddof=1) / np.sqrt(episodes):.2f} "
                   f"| {games['crashed'].mean():.3f} | "
                   + (f"{games['is_success'].mean():.3f} | " if success else "")
                   + f"{games['speed_sum'].sum() / length.sum():.1f} | {length.mean():.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="per-seed rows from single-seed run dirs into the CSV")
    ex.add_argument("runs", nargs="+")
    ex.add_argument("--csv", default=CSV)
    ex.add_argument("--commit", required=True, help="the commit the runs were made at")
    tb = sub.add_parser("table", help="the Markdown tables from the CSV")
    tb.add_argument("--csv", default=CSV)
    bl = sub.add_parser("baselines", help="random and constant policies on a task")
    bl.add_argument("--task", default=TASKS[0], choices=TASKS)
    bl.add_argument("--episodes", type=int, default=1000)
    bl.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "export":
        rows = export(args.runs, args.csv, args.commit)
        text = f"{len(rows)} rows of {len(args.runs)} runs written to {args.csv}"
    elif args.command == "baselines":
        text = baselines(args.task, args.episodes, args.seed)
    else:
        text = table(read(args.csv))
    print(text)
    return text


if __name__ == "__main__":
    main()
