"""The MinAtar table of docs/minatar.md from per-seed data committed in the repository.

    python -m scripts.minatar_table export runs/minatar_Breakout_ppo_pjx [...] \\
        [--csv docs/minatar_ppo_pjx.csv]
    python -m scripts.minatar_table table [--csv docs/minatar_ppo_pjx.csv]
    python -m scripts.minatar_table compare Anakin=docs/minatar_ppo_pjx.csv \\
        Sebulba=docs/minatar_breakout_sebulba.csv --game Breakout

`export` reads population run dirs (`--config.num_seeds`, one per game: `members/<i>-s<i>/`)
or single-seed run dirs (one `metrics.jsonl`, e.g. one Sebulba seed each) and writes, per
game and seed, `episode/return_mean` (the mean return of the last 100 training episodes) and
the training seconds at every 100k agent steps up to 5M (the value of the last update at or
before the step, as `scripts/plot.py --at` reads it; a step before any game ended, as in
Freeway's first 160k, has no row), replacing the rows of the games it reads and keeping the
others; the commit the runs were made at goes with each row.
`table` recomputes from the CSV alone: per game the IQM over seeds with its 95%
stratified-bootstrap interval (rliable, 2,000 resamples, bootstrap seed 0) at 1M, 2.5M and 5M
and the min-max at 5M; then the scores normalised per game as (score - random) / (reference -
random) with two references of the MinAtar paper at 5M (its DQN, docs/references/
minatar_normalization.json, and its best agent per game, the highest of the four curves in
docs/references/minatar_young_tian_dqn_ac.csv), per game and pooled over the games present
(rliable's IQM over runs x games). `compare` puts two CSVs of one game side by side
(docs/anakin.md's Anakin vs Sebulba table): per step each side's IQM [95% CI], the two-sided
Mann-Whitney U and Welch t p-values on the per-seed scores (scipy), and the gap that a
two-sided 5% test would detect with 80% power given the seeds' spread (normal approximation:
(1.96 + 0.84) * sqrt(s_a^2 / n_a + s_b^2 / n_b), s the sample standard deviation).
tests/scripts/test_minatar_table.py checks the committed CSVs against the tables in
docs/minatar.md, docs/results.md and docs/anakin.md.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from scripts.analysis import seed_csv

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
CSV = os.path.join(ROOT, "docs", "minatar_ppo_pjx.csv")
NORMALIZATION = os.path.join(ROOT, "docs", "references", "minatar_normalization.json")
PAPER_CURVES = os.path.join(ROOT, "docs", "references", "minatar_young_tian_dqn_ac.csv")
METRIC = "episode/return_mean"
GRID = tuple(range(100_000, 5_000_001, 100_000))
AT = (1_000_000, 2_500_000, 5_000_000)
COMPARE_AT = (1_000_000, 2_500_000, 4_000_000, 5_000_000)
FIELDS = ("game", "seed", "step", "return_mean", "train_s", "commit")
GAMES = ("Breakout", "Asterix", "Freeway", "SpaceInvaders", "Seaquest")


def export(run_dirs: list[str], path: str, commit: str) -> list[dict]:
    """Rows of every member of `run_dirs` at each grid step, merged into the CSV at `path`."""
    from scripts.analysis import rundir
    rows = []
    for run in run_dirs:
        members = os.path.join(run, "members")
        if os.path.isdir(members):
            seeds = [os.path.join(members, name) for name in sorted(os.listdir(members))]
        elif os.path.exists(os.path.join(run, "metrics.jsonl")):
            seeds = [run]
        else:
            raise SystemExit(f"minatar_table: {run} has neither members/ nor metrics.jsonl (a "
                             f"run dir of one seed or of --config.num_seeds is expected).")
        for member in seeds:
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
                value = rundir.curve_value_at(curve, step)
                if value is None and step > curve["step"][-1]:
                    break  # not reached
                if value is None or not np.isfinite(value):
                    continue  # before the first logged point, or before any game ended
                at = np.searchsorted(curve["step"], step, side="right") - 1
                rows.append({"game": game, "seed": int(seed), "step": step,
                             "return_mean": round(value, 4),
                             "train_s": round(float(curve["time"][at]), 1), "commit": commit})
    seed_csv.merge(path, rows, FIELDS, "game",
                   lambda r: (GAMES.index(r["game"]), int(r["seed"]), int(r["step"])))
    return rows


def read(path: str) -> list[dict]:
    return seed_csv.read(path)


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


def interval(task_scores: list[np.ndarray]) -> str:
    from scripts.analysis.scores import iqm_text
    return iqm_text(task_scores)


def table(rows: list[dict]) -> str:
    """The Markdown tables (scores, then normalised scores) of the games in `rows`."""
    games = [g for g in GAMES if any(r["game"] == g for r in rows)]
    out = ["| game | seeds | 1M: IQM [95% CI] | 2.5M | 5M | min-max at 5M |",
           "|---|---:|---:|---:|---:|---:|"]
    for game in games:
        cells = [interval([scores(rows, game, step)]) for step in AT]
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
            cells.append(interval([values]))
        out.append(f"| {game} | {cells[0]} | {cells[1]} |")
    if len(games) > 1:
        pooled = [interval(normalised[name]) for name in refs]
        out.append(f"| {len(games)} games pooled (IQM over runs x games) | {pooled[0]} | "
                   f"{pooled[1]} |")
    return "\n".join(out)


def _at(step: int) -> str:
    return f"{step / 1e6:g}M"


def compare(sides: dict[str, list[dict]], game: str, steps=COMPARE_AT) -> str:
    """A Markdown table of the two sides' per-seed scores on `game` at `steps`."""
    from scipy import stats
    (name_a, rows_a), (name_b, rows_b) = sides.items()
    n_a, n_b = (len(scores(r, game, steps[-1])) for r in (rows_a, rows_b))
    out = [f"| agent steps | {name_a}, IQM of {n_a} seeds [95% CI] | {name_b}, IQM of {n_b} "
           f"seeds [95% CI] | Mann-Whitney p (Welch t p) | gap detectable at 80% power |",
           "|---|---:|---:|---:|---:|"]
    for step in steps:
        a, b = scores(rows_a, game, step), scores(rows_b, game, step)
        if len(a) < 2 or len(b) < 2:
            raise SystemExit(f"minatar_table: {game} at {step}: {len(a)} and {len(b)} seeds; "
                             f"at least 2 a side are needed.")
        u = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        t = stats.ttest_ind(a, b, equal_var=False).pvalue
        gap = (1.96 + 0.84) * np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        out.append(f"| {_at(step)} | {interval([a])} | {interval([b])} | {u:.2f} ({t:.2f}) "
                   f"| {gap:.1f} |")
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
    cp = sub.add_parser("compare", help="two CSVs of one game side by side, with tests")
    cp.add_argument("sides", nargs=2, metavar="LABEL=CSV")
    cp.add_argument("--game", required=True, choices=GAMES)
    args = parser.parse_args(argv)
    if args.command == "export":
        rows = export(args.runs, args.csv, args.commit)
        text = f"{len(rows)} rows into {args.csv}"
    elif args.command == "compare":
        sides = {}
        for side in args.sides:
            label, _, path = side.partition("=")
            if not label or not os.path.exists(path):
                parser.error(f"{side!r}: LABEL=CSV with an existing CSV file is expected.")
            sides[label] = read(path)
        if len(sides) != 2:
            parser.error(f"two different labels are expected, got {args.sides}.")
        text = compare(sides, args.game)
    else:
        if not os.path.exists(args.csv):
            parser.error(f"--csv {args.csv!r}: no such file.")
        text = table(read(args.csv))
    print(text, file=sys.stdout)
    return text


if __name__ == "__main__":
    main()
