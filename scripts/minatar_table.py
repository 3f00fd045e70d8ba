"""The MinAtar table of docs/minatar.md from per-seed data committed in the repository.

    python -m scripts.minatar_table export runs/minatar_Breakout_ppo_pjx [...] \\
        [--csv docs/minatar_ppo_pjx.csv]
    python -m scripts.minatar_table table [--csv docs/minatar_ppo_pjx.csv]

`export` reads population run dirs (`--config.num_seeds`, one per game: `members/<i>-s<i>/`)
and writes, per game and seed, `episode/return_mean` (the mean return of the last 100 training
episodes) and the training seconds at every 100k agent steps up to 5M (the value of the last
update at or before the step, as `scripts/plot.py --at` reads it; a step before any game
ended, as in Freeway's first 160k, has no row), replacing the rows of the
games it reads and keeping the others; the commit the runs were made at goes with each row.
`table` recomputes from the CSV alone: per game the IQM over seeds with its 95%
stratified-bootstrap interval (rliable, 2,000 resamples, bootstrap seed 0) at 1M, 2.5M and 5M
and the min-max at 5M; then the scores normalised per game as (score - random) / (reference -
random) with two references of the MinAtar paper at 5M (its DQN, docs/references/
minatar_normalization.json, and its best agent per game, the highest of the four curves in
docs/references/minatar_young_tian_dqn_ac.csv), per game and pooled over the games present
(rliable's IQM over runs x games). tests/scripts/test_minatar_table.py checks the committed
CSV against the table in docs/minatar.md.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
CSV = os.path.join(ROOT, "docs", "minatar_ppo_pjx.csv")
NORMALIZATION = os.path.join(ROOT, "docs", "references", "minatar_normalization.json")
PAPER_CURVES = os.path.join(ROOT, "docs", "references", "minatar_young_tian_dqn_ac.csv")
METRIC = "episode/return_mean"
GRID = tuple(range(100_000, 5_000_001, 100_000))
AT = (1_000_000, 2_500_000, 5_000_000)
FIELDS = ("game", "seed", "step", "return_mean", "train_s", "commit")
GAMES = ("Breakout", "Asterix", "Freeway", "SpaceInvaders", "Seaquest")


def export(run_dirs: list[str], path: str, commit: str) -> list[dict]:
    """Rows of every member of `run_dirs` at each grid step, merged into the CSV at `path`."""
    from scripts.analysis import rundir
    rows = []
    for run in run_dirs:
        members = os.path.join(run, "members")
        if not os.path.isdir(members):
            raise SystemExit(f"minatar_table: {run} has no members/ (a --config.num_seeds run "
                             f"dir is expected).")
        for name in sorted(os.listdir(members)):
            member = os.path.join(members, name)
            config = rundir.read_json(os.path.join(member, "config.json")) or {}
            env, seed = config.get("env", {}).get("name", ""), config.get("seed")
            game = env.removeprefix("gymnax:").removesuffix("-MinAtar")
            if game not in GAMES or seed is None:
                raise SystemExit(f"minatar_table: {member}: env {env!r}, seed {seed!r}; a "
                                 f"gymnax MinAtar game ({', '.join(GAMES)}) with a seed is "
                                 f"expected.")
            curve = rundir.load_curve(member, METRIC)
            if curve is None:
                raise SystemExit(f"minatar_table: {member} logged no {METRIC}.")
            for step in GRID:
                value = rundir.value_at(member, METRIC, step)
                if value is None and step > curve["step"][-1]:
                    break  # not reached
                if value is None or not np.isfinite(value):
                    continue  # before the first logged point, or before any game ended
                at = np.searchsorted(curve["step"], step, side="right") - 1
                rows.append({"game": game, "seed": int(seed), "step": step,
                             "return_mean": round(value, 4),
                             "train_s": round(float(curve["time"][at]), 1), "commit": commit})
    games = {r["game"] for r in rows}
    kept = [r for r in read(path) if r["game"] not in games] if os.path.exists(path) else []
    merged = sorted(kept + rows, key=lambda r: (GAMES.index(r["game"]), int(r["seed"]),
                                                int(r["step"])))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(merged)
    return rows


def read(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def scores(rows: list[dict], game: str, step: int) -> np.ndarray:
    """The game's per-seed scores at `step` (seed order)."""
    picked = sorted((int(r["seed"]), float(r["return_mean"])) for r in rows
                    if r["game"] == game and int(r["step"]) == step)
    return np.asarray([v for _, v in picked])


def anchors() -> dict[str, dict[str, tuple[float, float]]]:
    """{"DQN": {game: (random, reference)}, "best": ...}: the paper's DQN and its best agent
    per game at 5M, with the same random scores."""
    from scripts.analysis.references import load_references
    from scripts.analysis.scores import load_normalization

    def game(env: str) -> str:
        return env.removeprefix("gymnax:").removesuffix("-MinAtar")
    dqn = {game(env): pair for env, pair in load_normalization(NORMALIZATION).items()}
    best: dict[str, float] = {}
    for (_, env), (steps, values) in load_references(PAPER_CURVES).items():
        best[game(env)] = max(best.get(game(env), -np.inf),
                              float(values[steps == 5_000_000][0]))
    return {"DQN": dqn, "best": {g: (random, best[g]) for g, (random, _) in dqn.items()}}


def _interval(task_scores: list[np.ndarray]) -> str:
    from scripts.analysis.scores import aggregate_interval
    point, ci = aggregate_interval(task_scores)
    point = float(np.ravel(point)[0])
    if ci is None:
        return f"{point:.2f}"
    return f"{point:.2f} [{float(np.ravel(ci[0])[0]):.2f}, {float(np.ravel(ci[1])[0]):.2f}]"


def table(rows: list[dict]) -> str:
    """The Markdown tables (scores, then normalised scores) of the games in `rows`."""
    games = [g for g in GAMES if any(r["game"] == g for r in rows)]
    out = ["| game | seeds | 1M: IQM [95% CI] | 2.5M | 5M | min-max at 5M |",
           "|---|---:|---:|---:|---:|---:|"]
    for game in games:
        cells = [_interval([scores(rows, game, step)]) for step in AT]
        last = scores(rows, game, AT[-1])
        out.append(f"| {game} | {len(last)} | {cells[0]} | {cells[1]} | **{cells[2]}** | "
                   f"{last.min():.2f}-{last.max():.2f} |")
    refs = anchors()
    out += ["", "| game | normalised IQM [95% CI], DQN anchor | best-agent anchor |",
            "|---|---:|---:|"]
    normalised = {name: [] for name in refs}
    for game in games:
        cells = []
        for name, ref in refs.items():
            low, high = ref[game]
            values = (scores(rows, game, AT[-1]) - low) / (high - low)
            normalised[name].append(values)
            cells.append(_interval([values]))
        out.append(f"| {game} | {cells[0]} | {cells[1]} |")
    if len(games) > 1:
        pooled = [_interval(normalised[name]) for name in refs]
        out.append(f"| {len(games)} games pooled (IQM over runs x games) | {pooled[0]} | "
                   f"{pooled[1]} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="per-seed rows from population run dirs into the CSV")
    ex.add_argument("runs", nargs="+")
    ex.add_argument("--csv", default=CSV)
    ex.add_argument("--commit", required=True, help="the commit the runs were made at")
    tb = sub.add_parser("table", help="the Markdown tables from the CSV")
    tb.add_argument("--csv", default=CSV)
    args = parser.parse_args(argv)
    if args.command == "export":
        rows = export(args.runs, args.csv, args.commit)
        text = f"{len(rows)} rows into {args.csv}"
    else:
        if not os.path.exists(args.csv):
            parser.error(f"--csv {args.csv!r}: no such file.")
        text = table(read(args.csv))
    print(text, file=sys.stdout)
    return text


if __name__ == "__main__":
    main()
