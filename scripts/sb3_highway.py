"""This library beside Stable-Baselines3 on highway-fast: the same task, budget and machine.

    bash scripts/sb3_venv.sh                                    # .venv-sb3: torch, SB3, highway-env
    .venv-sb3/bin/python -m scripts.sb3_highway run --seeds 0 1 2 --steps 20000 \\
        --out runs/sb3_side                                     # both trainings, timed
    .venv-sb3/bin/python -m scripts.sb3_highway evaluate runs/sb3_side --commit <sha> \\
        [--part 0/2 --csv /tmp/part0.csv]                       # one of n processes
    python -m scripts.sb3_highway merge /tmp/part0.csv /tmp/part1.csv   # -> the CSV
    python -m scripts.sb3_highway table                         # docs/driving.md's tables

`run` trains, per seed and in turn (interleaved, so a change of load hits both), highway-env's
own PPO script [H] (`scripts/sb3_highway_ppo.py`, Farama-Foundation/HighwayEnv 23d7d0c:
Stable-Baselines3 PPO, 6 envs in subprocesses, `MlpPolicy` with pi and vf nets of [256, 256],
n_steps 128, batch 64, 10 epochs, lr 5e-4, gamma 0.8) on the Python `highway-fast-v0`, and this
library's `experiments/configs/ppo_highway.py` (the same settings, field by field) on EnvPool's
`HighwayFast-v0`, each a process of its own, with the wall time of each from its start to its
policy saved (imports, compilation and env start included; SB3 does no evaluation, this
library's run ends with its 100-game evaluation, under 1 s) and the 1-minute load average
before it (which still counts the run before: a record, not a measure of other work).
This library's policy is then exported as ONNX (`python -m scripts.export --onnx`).
`evaluate` plays both libraries' final policies greedily (SB3's `predict(deterministic=True)`,
the export's ONNX model) on both simulators, the same games for every policy: the first game
of each of `--episodes` envs seeded `--seed`, `--seed`+1, ... (EnvPool's seeds, gymnasium's
`reset(seed=)`), beside the always-SLOWER and the uniformly random policy, and writes one CSV
row per policy, seed and simulator (`--part` spreads them over processes, `merge` joins the
parts). `table` recomputes the
Markdown tables from the CSV alone: per library and simulator the mean over seeds of each
column with its min-max, and the wall times with their ratio.

torch, stable-baselines3 and highway-env are not this library's dependencies: `run` and
`evaluate` run in the venv of scripts/sb3_venv.sh, and `run` calls this library's commands with
`--python` (default .venv/bin/python). `table` needs numpy only.
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np

from scripts import driving_table

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
CSV = os.path.join(ROOT, "docs", "driving_sb3.csv")
PYTHON_ID, ENVPOOL_ID = "highway-fast-v0", "HighwayFast-v0"
SIMULATORS = ("python", "envpool")
LIBRARIES = ("sb3", "ours")
# The policies a learned one must beat, played on the same games of both simulators: beside
# the trained ones they show how far the two simulators' games agree. name -> meta-action.
BASELINES = {"always SLOWER": 4, "uniformly random": None}
# What each policy's label reads in the tables.
NAMES = {"sb3": "Stable-Baselines3 PPO, trained on Python highway-env",
         "ours": "this library's PPO, trained on EnvPool",
         **{name: name for name in BASELINES}}
FIELDS = ("library", "seed", "steps", "wall_s", "load", "simulator", "episodes", "return",
          "crash_rate", "speed", "length", "commit")
# [H] scripts/sb3_highway_ppo.py: n_cpu, batch_size and the PPO arguments.
SB3_ENVS, SB3_BATCH = 6, 64


def train_sb3(seed: int, steps: int, out: str) -> dict:
    """[H] as it is, with a seed: SB3 PPO on the Python highway-fast-v0 for `steps` steps;
    saves `out`/model.zip and `out`/sb3.json (the steps done, the seconds `learn` took)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    os.makedirs(out, exist_ok=True)
    # "module:id" makes gymnasium import highway_env (which registers the id) in each
    # subprocess: SB3's SubprocVecEnv starts them by forkserver, without this module's imports.
    env = make_vec_env(f"highway_env:{PYTHON_ID}", n_envs=SB3_ENVS, seed=seed,
                       vec_env_cls=SubprocVecEnv)
    model = PPO("MlpPolicy", env,
                policy_kwargs=dict(net_arch=[dict(pi=[256, 256], vf=[256, 256])]),
                n_steps=SB3_BATCH * 12 // SB3_ENVS, batch_size=SB3_BATCH, n_epochs=10,
                learning_rate=5e-4, gamma=0.8, verbose=0, seed=seed)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    learn_s = time.perf_counter() - start
    model.save(os.path.join(out, "model"))
    env.close()
    info = {"seed": seed, "steps": int(model.num_timesteps), "learn_s": learn_s}
    with open(os.path.join(out, "sb3.json"), "w") as f:
        json.dump(info, f)
    return info


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, 1-minute load average before it) of a command run to its end."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - start, load


def run(seeds: list[int], steps: int, out: str, python: str) -> list[dict]:
    """Per seed, SB3's training then this library's, each timed as a process of its own;
    this library's final policy exported with ONNX. Each seed's pair is appended to
    `out`/walls.json as soon as it is done, so a stopped run keeps the seeds it finished."""
    walls = []
    path = os.path.join(out, "walls.json")
    for seed in seeds:
        sb3_dir = os.path.join(out, "sb3", f"s{seed}")
        wall, load = _timed([sys.executable, "-m", "scripts.sb3_highway", "train-sb3",
                             "--seed", str(seed), "--steps", str(steps), "--out", sb3_dir])
        with open(os.path.join(sb3_dir, "sb3.json")) as f:
            done = json.load(f)["steps"]
        walls.append({"library": "sb3", "seed": seed, "steps": done, "wall_s": wall,
                      "load": load, "dir": sb3_dir})
        ours_dir = os.path.join(out, "ours", f"s{seed}")
        # SB3 ends at the end of the rollout that reaches `steps` (27 x 768 = 20,736 for 20k):
        # this library runs to the same step.
        wall, load = _timed([python, "experiments/train.py",
                             "--config=experiments/configs/ppo_highway.py",
                             f"--config.seed={seed}", f"--config.total_env_steps={done}",
                             f"--config.run_dir={ours_dir}"])
        with open(os.path.join(ours_dir, "summary.json")) as f:
            done = json.load(f)["env_steps"]
        walls.append({"library": "ours", "seed": seed, "steps": done, "wall_s": wall,
                      "load": load, "dir": ours_dir})
        subprocess.run([python, "-m", "scripts.export", ours_dir, "--onnx"], check=True,
                       cwd=ROOT)
        print(json.dumps(walls[-2:]), flush=True)
        before = []
        if os.path.exists(path):
            with open(path) as f:
                before = json.load(f)
        with open(path, "w") as f:
            json.dump(before + walls[-2:], f, indent=1)
    return walls


def make_envs(simulator: str, episodes: int, seed: int):
    """`episodes` envs of highway-fast on `simulator`, env i seeded `seed` + i, as one vector
    env whose finished envs reset on their next step (EnvPool's and gymnasium's default)."""
    if simulator == "envpool":
        import envpool
        return envpool.make_gymnasium(ENVPOOL_ID, num_envs=episodes, seed=seed)
    if simulator == "python":
        import gymnasium
        import highway_env  # noqa: F401
        env = gymnasium.vector.SyncVectorEnv(
            [lambda: gymnasium.make(PYTHON_ID) for _ in range(episodes)])
        reset = env.reset
        env.reset = lambda **kw: reset(seed=seed, **kw)  # env i gets seed + i
        return env
    raise ValueError(f"simulator {simulator!r}; allowed: {SIMULATORS}")


def first_games(env, act, episodes: int) -> dict:
    """driving_table.first_games (the first game of each env under `act(obs) -> actions`),
    with each game's mean speed: per game the return, the steps, the crash and the speed."""
    games = driving_table.first_games(env, act, episodes)
    games["speed"] = games.pop("speed_sum") / games["length"]
    return games


def _policy(library: str, run_dir: str):
    """act(obs) -> actions of a trained policy, greedy: SB3's model.zip, or the newest
    greedy ONNX export of this library's run."""
    if library == "sb3":
        from stable_baselines3 import PPO
        model = PPO.load(os.path.join(run_dir, "model.zip"), device="cpu")
        return lambda obs: model.predict(obs, deterministic=True)[0]
    folders = sorted(glob.glob(os.path.join(run_dir, "export", "update*-greedy")),
                     key=lambda p: int(os.path.basename(p)[6:].split("-")[0]))
    if not folders:
        raise FileNotFoundError(f"no export in {run_dir}/export: run "
                                f"`python -m scripts.export {run_dir} --onnx`")
    sys.path.insert(0, folders[-1])
    from load_policy import load  # the export's own copy of scripts/policy_loader.py
    sys.path.pop(0)
    policy = load(folders[-1], runtime="onnxruntime")
    return lambda obs: np.asarray(policy(np.asarray(obs, np.float32))[0])


def _baseline(action: int | None, episodes: int, seed: int):
    """act(obs) of a constant meta-action, or (None) a uniformly random one."""
    rng = np.random.default_rng(seed)
    if action is None:
        return lambda obs: rng.integers(0, 5, episodes)
    return lambda obs: np.full(episodes, action)


def evaluate(out: str, episodes: int, seed: int, commit: str, path: str = CSV,
             part: tuple[int, int] = (0, 1)) -> list[dict]:
    """Every run of `out`/walls.json and the BASELINES on both simulators, the same games for
    each; the rows are written to the CSV at `path` (replacing it). `part` (k, n): only every
    n-th policy from the k-th, to spread the Python env's slow games (~15 steps per second
    here) over n processes; `merge` joins the parts' CSVs."""
    with open(os.path.join(out, "walls.json")) as f:
        walls = json.load(f)
    walls += [{"library": name, "seed": "", "steps": 0, "wall_s": "", "load": ""}
              for name in BASELINES]
    walls = walls[part[0]::part[1]]
    rows = []
    for w in walls:
        for simulator in SIMULATORS:
            act = (_baseline(BASELINES[w["library"]], episodes, seed)
                   if w["library"] in BASELINES else _policy(w["library"], w["dir"]))
            games = first_games(make_envs(simulator, episodes, seed), act, episodes)
            rows.append({"library": w["library"], "seed": w["seed"], "steps": w["steps"],
                         "wall_s": _round(w["wall_s"]), "load": _round(w["load"]),
                         "simulator": simulator, "episodes": episodes,
                         "return": _round(games["return"].mean(), 4),
                         "crash_rate": _round(games["crashed"].mean(), 4),
                         "speed": _round(games["speed"].mean(), 4),
                         "length": _round(games["length"].mean(), 4), "commit": commit})
            print(rows[-1], flush=True)
    write(rows, path)
    return rows


def _round(value, digits: int = 2):
    return value if value == "" else round(float(value), digits)


def write(rows: list[dict], path: str = CSV) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def merge(parts: list[str], path: str = CSV) -> list[dict]:
    """The rows of the parts' CSVs (e.g. the committed CSV and a new budget's parts), in the
    order of the tables, written to `path`. A row that two parts share (the same policy, seed,
    budget, simulator and number of games: a baseline played again) is kept once, the first."""
    order = {name: i for i, name in enumerate((*LIBRARIES, *BASELINES))}
    rows, seen = [], set()
    for r in (r for p in parts for r in read(p)):
        key = (r["library"], r["seed"], r["steps"], r["simulator"], r["episodes"])
        if key not in seen:
            seen.add(key)
            rows.append(r)
    rows.sort(key=lambda r: (order[r["library"]], int(r["steps"]), r["seed"],
                             SIMULATORS.index(r["simulator"])))
    write(rows, path)
    return rows


def read(path: str = CSV) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _cell(values: np.ndarray, digits: int) -> str:
    """The mean, and the min to max where there are several values."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (f"{values.mean():.{digits}f} ({values.min():.{digits}f} to "
            f"{values.max():.{digits}f})")


def table(rows: list[dict]) -> str:
    """Per step budget of the trained policies, the evaluation table (policy x simulator: the
    mean over seeds, min to max; the baselines' rows in each) and the wall-time table (per
    library: mean, min to max; the ratio of the means and its range over seeds). With more
    than one budget in the rows, each budget's tables open with a line naming it."""
    trained = [r for r in rows if r["library"] in LIBRARIES]
    budgets = sorted({int(r["steps"]) for r in trained})
    baselines = [r for r in rows if r["library"] in BASELINES]
    out = []
    for budget in budgets:
        if len(budgets) > 1:
            out += [f"At {budget:,} env steps:", ""]
        out += _budget_table([r for r in trained if int(r["steps"]) == budget] + baselines)
        out.append("")
    return "\n".join(out[:-1] if budgets else _budget_table(baselines))


def _budget_table(rows: list[dict]) -> list[str]:
    """The lines of `table` for rows of one budget."""
    out = ["| policy | played on | seeds | return | crash rate | speed (m/s) | steps per game |",
           "|---|---|---:|---:|---:|---:|---:|"]
    walls = {}
    for library in (*LIBRARIES, *BASELINES):
        for simulator in SIMULATORS:
            sel = [r for r in rows if r["library"] == library and r["simulator"] == simulator]
            if not sel:
                continue
            columns = ("return", "crash_rate", "speed", "length") + (
                ("wall_s", "steps", "seed") if library in LIBRARIES else ())
            col = {c: np.array([float(r[c]) for r in sel]) for c in columns}
            played = "Python highway-env" if simulator == "python" else "EnvPool"
            seeds = len(sel) if library in LIBRARIES else "-"
            out.append(f"| {NAMES[library]} | {played} | {seeds} | "
                       f"{_cell(col['return'], 2)} | {_cell(col['crash_rate'], 2)} | "
                       f"{_cell(col['speed'], 1)} | {_cell(col['length'], 1)} |")
            if library in LIBRARIES:
                walls[library] = col
    if not walls:
        return out
    out += ["", "| training | env steps | seeds | wall time to the budget (s) | env steps per "
            "second |", "|---|---:|---:|---:|---:|"]
    for library, col in walls.items():
        out.append(f"| {NAMES[library]} | {int(col['steps'].min()):,} | {len(col['steps'])} | "
                   f"{_cell(col['wall_s'], 1)} | {_cell(col['steps'] / col['wall_s'], 0)} |")
    if len(walls) == 2:
        sb3, ours = walls["sb3"], walls["ours"]
        per_seed = [w / ours["wall_s"][list(ours["seed"]).index(s)]
                    for s, w in zip(sb3["seed"], sb3["wall_s"]) if s in ours["seed"]]
        ratio = sb3["wall_s"].mean() / ours["wall_s"].mean()
        out += ["", f"Wall-time ratio, SB3 / this library: {ratio:.1f}x (means over seeds; "
                f"per seed {min(per_seed):.1f}x to {max(per_seed):.1f}x)."]
    return out


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rn = sub.add_parser("run", help="both trainings per seed, timed (in .venv-sb3)")
    rn.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    rn.add_argument("--steps", type=int, default=20_000)
    rn.add_argument("--out", default="runs/sb3_side")
    rn.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                    help="this library's interpreter")
    tr = sub.add_parser("train-sb3", help="one SB3 training ([H]); `run` calls it")
    tr.add_argument("--seed", type=int, required=True)
    tr.add_argument("--steps", type=int, required=True)
    tr.add_argument("--out", required=True)
    ev = sub.add_parser("evaluate", help="every policy of a `run` on both simulators")
    ev.add_argument("out")
    ev.add_argument("--episodes", type=int, default=100)
    ev.add_argument("--seed", type=int, default=1_000_000)
    ev.add_argument("--commit", required=True, help="the commit the runs were made at")
    ev.add_argument("--csv", default=CSV)
    ev.add_argument("--part", default="0/1", metavar="K/N",
                    help="only every N-th policy from the K-th (processes side by side)")
    mg = sub.add_parser("merge", help="join the CSVs of `evaluate --part` runs")
    mg.add_argument("parts", nargs="+")
    mg.add_argument("--csv", default=CSV)
    tb = sub.add_parser("table", help="the Markdown tables from the CSV")
    tb.add_argument("--csv", default=CSV)
    args = parser.parse_args(argv)
    if args.command in ("run", "train-sb3") and args.steps < 1:
        parser.error(f"--steps={args.steps} must be >= 1")
    if args.command == "run":
        text = json.dumps(run(args.seeds, args.steps, args.out, args.python), indent=1)
    elif args.command == "train-sb3":
        text = json.dumps(train_sb3(args.seed, args.steps, args.out))
    elif args.command == "evaluate":
        if args.episodes < 1:
            parser.error(f"--episodes={args.episodes} must be >= 1")
        k, _, n = args.part.partition("/")
        if not (k.isdigit() and n.isdigit() and int(k) < int(n)):
            parser.error(f"--part={args.part!r}: K/N with 0 <= K < N, e.g. 1/2")
        text = table(evaluate(args.out, args.episodes, args.seed, args.commit, args.csv,
                              (int(k), int(n))))
    elif args.command == "merge":
        text = table(merge(args.parts, args.csv))
    else:
        text = table(read(args.csv))
    print(text)
    return text


if __name__ == "__main__":
    main()
