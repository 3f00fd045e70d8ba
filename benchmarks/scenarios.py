"""PPO trained on a fixed gymnax env and on randomised scenarios (env.randomize), each seed
evaluated greedily on values of the varied field inside and outside the training range.

    python -m benchmarks.scenarios run [--task cartpole|pendulum] [--steps N] [--seeds K]
    python -m benchmarks.scenarios table [--task ...]
    python -m benchmarks.scenarios plot [--task ...]   # the training curves, a PNG

Tasks: `cartpole`, experiments/configs/ppo_gymnax.py as it is (CartPole-v1, 500k steps), the
pole length fixed (0.5) or drawn from uniform(0.25, 1.0); `pendulum`, the same config on
gymnax Pendulum-v1 with the settings of ppo_mujoco.py's `:pendulum` variant (16 envs x 128
steps, gamma 0.9, lr 1e-3, 10 epochs x 16 minibatches, observations normalised; 1M steps),
the pendulum's mass fixed (1.0) or drawn from uniform(0.5, 2.0).

`run` trains, per condition, K seeds as one population (num_seeds: one compiled program,
docs/anakin.md), then plays each member greedily with `python -m scripts.evaluate <run>
--member m --scenario FIELD=choice(V)` for every evaluated value V (E games each, on the
evaluation seeds, disjoint from training's), and appends one row per condition, seed and value
to the task's CSV (the mean return of the E games) and each member's training curve (env steps,
the 100-game mean return) to its curves CSV. `table` recomputes the Markdown table of
docs/howto_env.md from the CSV: per condition and value, the IQM over seeds with its 95%
stratified-bootstrap interval (scripts/analysis/scores.py: rliable, 2,000 resamples,
bootstrap seed 0, so the table recomputes to the digit) and each seed's value; `plot` draws the
curves (IQM over seeds with its 95% interval shaded, `iqm_band`).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys
import tempfile

from scripts.analysis.scores import aggregate_interval

DOCS = os.path.join(os.path.dirname(__file__), "..", "docs")
FIELDS = ("condition", "seed", "env_steps", "value", "return", "episodes", "train_wall_s")
CURVE_FIELDS = ("condition", "seed", "env_steps", "return_mean")


@dataclasses.dataclass(frozen=True)
class Task:
    name: str        # gymnax id
    field: str       # the EnvParams field varied
    default: float   # its fixed value
    drawn: str       # its training distribution in the randomised condition
    values: tuple    # the values evaluated
    steps: int       # env steps per seed
    csv: str         # per-seed evaluation rows (docs/)

    @property
    def conditions(self) -> dict[str, str]:
        return {"fixed": "", "randomised": f"{self.field}={self.drawn}"}

    @property
    def curves(self) -> str:
        return self.csv.replace(".csv", "_curves.csv")


TASKS = {
    "cartpole": Task("gymnax:CartPole-v1", "length", 0.5, "uniform(0.25, 1.0)",
                     (0.1, 0.5, 1.5, 2.5), 500_000, os.path.join(DOCS, "scenarios_cartpole.csv")),
    "pendulum": Task("gymnax:Pendulum-v1", "m", 1.0, "uniform(0.5, 2.0)",
                     (1.0, 1.5, 2.5, 3.5), 1_000_000, os.path.join(DOCS, "scenarios_pendulum.csv")),
}


def config_of(task: Task):
    from experiments.configs import ppo_gymnax
    config = ppo_gymnax.get_config()
    config.env.name = task.name
    if task.name == "gymnax:Pendulum-v1":  # ppo_mujoco.py's :pendulum settings
        config.num_envs, config.unroll_length = 16, 128
        agent = config.agent
        agent.discount, agent.gae_lambda, agent.learning_rate = 0.9, 0.95, 1e-3
        agent.num_epochs, agent.num_minibatches = 10, 16
        agent.obs_norm, agent.obs_clip, agent.adam_eps = True, 10.0, 1e-5
        agent.entropy_cost, agent.max_grad_norm = 0.0, 0.5
    return config


def run(task: Task, steps: int, seeds: int, episodes: int) -> None:
    from benchmarks.harness.populations import append_rows, run_quietly, train_population
    rows, curves = [], []
    for condition, randomize in task.conditions.items():
        with tempfile.TemporaryDirectory() as tmp:
            config = config_of(task)
            config.env.randomize = randomize
            run_dir = os.path.join(tmp, condition)
            result, wall = train_population(config, seeds, steps, run_dir, checkpoint_keep=1)
            for m, member in enumerate(sorted(os.listdir(os.path.join(run_dir, "members")))):
                curves += [{"condition": condition, "seed": m, "env_steps": r["step"],
                            "return_mean": round(r["episode/return_mean"], 1)}
                           for r in _rows(os.path.join(run_dir, "members", member))]
                scenarios = [a for v in task.values
                             for a in ("--scenario", f"{task.field}=choice({v})")]
                out = os.path.join(tmp, f"eval-{m}.json")
                run_quietly([sys.executable, "-m", "scripts.evaluate", run_dir,
                             "--member", str(m), "--episodes", str(episodes),
                             "--num_envs", "16", "--output", out, *scenarios])
                with open(out) as f:
                    report = json.load(f)
                for value, row in zip(task.values, report["scenarios"]):
                    rows.append({"condition": condition, "seed": m,
                                 "env_steps": result.env_steps, "value": value,
                                 "return": row["mean"], "episodes": row["episodes"],
                                 "train_wall_s": round(wall, 1)})
            print(f"{condition}: trained in {wall:.0f} s, evaluated {seeds} seeds", flush=True)
    append_rows(task.csv, FIELDS, rows)
    append_rows(task.curves, CURVE_FIELDS, curves)


def _rows(member_dir: str) -> list[dict]:
    """A member's logged rows that carry its 100-game mean return."""
    with open(os.path.join(member_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if "episode/return_mean" in r]


def _read(path: str) -> list[dict]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if rows and "length" in rows[0]:  # the first CartPole rows named the value "length"
        for r in rows:
            r["value"] = r.pop("length")
    return rows


def table(task: Task) -> str:
    rows = _read(task.csv)
    lines = [f"| trained on | {task.field} | IQM return over seeds [95% CI] | per seed |",
             "|---|---:|---|---|"]
    for condition, randomize in task.conditions.items():
        for value in task.values:
            chosen = sorted((r for r in rows if r["condition"] == condition
                             and float(r["value"]) == value), key=lambda r: int(r["seed"]))
            if not chosen:
                continue
            point, ci = aggregate_interval([[float(r["return"]) for r in chosen]])
            lo, hi = ci[:, 0]
            label = f"fixed {task.default:g}" if not randomize else task.drawn
            per_seed = ", ".join(f"{float(r['return']):.0f}" for r in chosen)
            lines.append(f"| {label} | {value:g} | {point[0]:.1f} [{lo:.1f}, {hi:.1f}] | "
                         f"{per_seed} |")
    return "\n".join(lines)


def plot(task: Task, output: str) -> None:
    """The training curves: per condition, the IQM over seeds of the 100-game mean return on
    a grid of env steps every seed reached, its 95% stratified-bootstrap interval shaded
    (`iqm_band`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from benchmarks.harness.populations import draw_seed_curves, save_figure
    rows = _read(task.curves)
    fig, ax = plt.subplots(figsize=(6, 4))
    for condition, randomize in task.conditions.items():
        mine = [r for r in rows if r["condition"] == condition]
        if mine:
            label = f"{task.field} fixed {task.default:g}" if not randomize else randomize
            draw_seed_curves(ax, mine, "return_mean", label)
    ax.set_xlabel("env steps")
    ax.set_ylabel("100-game mean return (IQM, 95% CI)")
    ax.set_title(f"PPO on {task.name}")
    ax.legend()
    save_figure(fig, output)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("run", "table", "plot"):
        s = sub.add_parser(name)
        s.add_argument("--task", choices=tuple(TASKS), default="cartpole")
        s.add_argument("--csv", default=None, help="default: the task's, in docs/ (its curves "
                       "beside it, *_curves.csv)")
        if name == "run":
            s.add_argument("--steps", type=int, default=None, help="default: the task's")
            s.add_argument("--seeds", type=int, default=5)
            s.add_argument("--episodes", type=int, default=32)
        if name == "plot":
            s.add_argument("--output", default=None, help="default: the curves CSV's .png")
    args = p.parse_args(argv)
    task = TASKS[args.task]
    if args.csv:
        task = dataclasses.replace(task, csv=args.csv)
    if args.command == "run":
        run(task, args.steps or task.steps, args.seeds, args.episodes)
    if args.command == "plot":
        plot(task, args.output or task.curves.replace(".csv", ".png"))
        return
    print(table(task))


if __name__ == "__main__":
    main()
