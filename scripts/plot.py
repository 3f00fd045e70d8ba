"""Learning curves from run directories: return vs env steps and vs wall clock, to a PNG.

    python scripts/plot.py runs/sweep-lr --output runs/sweep-lr/curves.png
    python scripts/plot.py runs/impala-CartPole-v1-s0-* runs/impala-CartPole-v1-s1-* \\
        --metric episode/return_mean --title "IMPALA CartPole"

Each argument is a run dir or a folder searched for run dirs (those with metrics.jsonl or
TensorBoard event files; metrics.jsonl is read when both exist). Runs are grouped into
settings: by the label a sweep wrote (scripts/sweep.py), else by the config.json fields that
differ between the runs (seed, run_dir and similar excluded), else one setting per dir. Each
setting is drawn as the mean over its seeds, with the min-max range over seeds shaded (see
`seed_band` for seeds of different lengths).
The wall-clock axis counts from the creation of the run's TensorBoard writer (before
compilation); a resumed run's downtime between sessions is included.

Aggregates over seeds (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice",
with their `rliable` package). Runs are grouped by setting (every config field but the seed and
the env) and by env (config env.name):

    python scripts/plot.py runs/seeds --aggregate iqm --output iqm.png \\
        --profile profile.png --normalize atari_nature

--aggregate iqm draws, per setting and env, the interquartile mean (IQM) over seeds with a
shaded 95% stratified-bootstrap confidence interval, on a step grid where every seed has data
(up to the shortest seed's last step). --aggregate iqm, --profile and --table print a markdown
table of the final scores (summary.json, else the last logged point): setting, env, seeds, IQM,
95% CI, median, mean, min, max. --profile draws the performance profile (score distribution:
the fraction of runs scoring above tau) of the final scores, one line per setting over all its
envs, raw or min-max normalised by --normalize: a built-in table (atari_nature: random and
human scores of Mnih et al. 2015) or a JSON file {"Pong": {"random": -20.7, "reference": 9.3}}.
With --normalize, each setting on several envs also gets an "all envs" row (IQM over runs x
envs of the normalised scores). Below 4 seeds the IQM trims nothing (it is the mean); with one
seed there is no interval (noted, drawn as the run itself).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

import numpy as np

if __package__:  # imported as scripts.plot (the tests)
    from . import _runs
else:  # run as `python scripts/plot.py`: scripts/ is sys.path[0]
    import _runs

AXES = {"step": "env steps", "time": "wall clock (minutes)"}
AGGREGATES = ("mean", "iqm")  # mean: mean over seeds, min-max shaded; iqm: IQM, 95% CI shaded
# Min-max normalisation tables: game -> (random score, reference score); 0 = random, 1 = ref.
NORMALIZE_TABLES = {
    # Mnih et al. 2015, "Human-level control through deep reinforcement learning", Nature 518,
    # Extended Data Table 2: random play and a professional human games tester (DQN reached
    # 132% on Pong and 1327% on Breakout of this range). Later papers (dqn_zoo, rliable's
    # Atari-57 data) use other human figures (Pong 14.6, Breakout 30.5): say which you used.
    "atari_nature": {"Pong": (-20.7, 9.3), "Breakout": (1.7, 31.8)},
}


def group_curves(run_dirs: list[str], metric: str) -> dict[str, list[dict]]:
    """{setting label: [curve per seed]}, runs without the metric left out (with a note)."""
    labels = _runs.labels(run_dirs)
    groups: dict[str, list[dict]] = {}
    for run in run_dirs:
        curve = _runs.load_curve(run, metric)
        if curve is None:
            print(f"plot: {run} has no {metric!r} yet; left out", file=sys.stderr)
            continue
        groups.setdefault(labels[run], []).append(curve)
    return groups


def seed_band(curves: list[dict], x: str, points: int = 200) -> tuple[np.ndarray, ...]:
    """(grid, mean, min, max) over seeds, the curves interpolated on a common x grid.

    A seed enters at its first logged point and holds its last value after its end (a run
    that finished or stopped early keeps its final return), so seeds that started late (slow
    compile) or ended early do not cut the other curves short.
    """
    if len(curves) == 1:  # nothing to interpolate: the run's own points
        c = curves[0]
        return c[x], c["value"], c["value"], c["value"]
    grid = np.linspace(min(c[x][0] for c in curves), max(c[x][-1] for c in curves), points)
    ys = np.stack([np.interp(grid, c[x], c["value"], left=np.nan) for c in curves])
    return grid, np.nanmean(ys, 0), np.nanmin(ys, 0), np.nanmax(ys, 0)


def group_runs(run_dirs: list[str]) -> dict[tuple[str, str], list[str]]:
    """{(setting, env): run dirs}: the setting is every config field but the seed and the env."""
    labels = _runs.labels(run_dirs, exclude=(_runs.ENV_FIELD,))
    groups: dict[tuple[str, str], list[str]] = {}
    for run in run_dirs:
        groups.setdefault((labels[run], _runs.env_of(run)), []).append(run)
    return groups


def _rliable():
    try:
        from rliable import library, metrics
    except ImportError as e:
        raise SystemExit(f"plot.py: the IQM, its intervals and the profile need rliable ({e}): "
                         f"pip install rliable==1.2.0 (see requirements.txt)") from None
    return library, metrics


@contextlib.contextmanager
def _seeded(seed: int):
    """rliable's StratifiedBootstrap draws from NumPy's global RNG (not its random_state), so
    the intervals are made reproducible by seeding it, and the caller's state is restored."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def aggregate_interval(task_scores: list[np.ndarray], reps: int = 2000, seed: int = 0,
                       func=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(point estimate, (2, ...) 95% stratified-bootstrap interval) of `func` (default: IQM)
    over the runs of several tasks (one array of per-run scores, or of curves, per task).

    Runs are resampled within each task (rliable's stratified bootstrap). Tasks with the same
    number of runs go to rliable as one (runs x tasks x ...) array, as its papers do; different
    numbers of runs as a list (its StratifiedIndependentBootstrap). Fewer than 2 runs in any
    task: no interval (None), as resampling one value would only repeat it.
    """
    library, metrics = _rliable()
    func = func or (lambda flat: np.array([metrics.aggregate_iqm(flat)]))
    if len({len(t) for t in task_scores}) == 1:
        data = np.stack(task_scores, axis=1)  # runs x tasks x ...
        stat = lambda x: func(x.reshape(-1, *x.shape[2:]))  # noqa: E731 (all runs, all tasks)
    else:
        data = [np.asarray(t, float) for t in task_scores]
        stat = lambda *ts: func(np.concatenate(ts))  # noqa: E731
    if min(len(t) for t in task_scores) < 2:
        return stat(*data) if isinstance(data, list) else stat(data), None
    with _seeded(seed):
        point, ci = library.get_interval_estimates({"x": data}, stat, reps=reps)
    return point["x"], ci["x"]


def iqm_band(curves: list[dict], x: str, reps: int = 2000, seed: int = 0,
             points: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                         np.ndarray | None]:
    """(grid, IQM, CI low, CI high) over seeds, on a common x grid where every seed has data.

    The grid runs from the latest first point to the earliest last point of the seeds, so no
    seed is extrapolated (a seed cut short cuts the aggregate; see the printed note). At each
    grid point the interval is rliable's stratified bootstrap over seeds (pointwise, as in its
    sample-efficiency curves, but drawing whole seeds). One seed: its own points, no interval
    (None, None).
    """
    if len(curves) == 1:
        c = curves[0]
        return c[x], c["value"], None, None
    start, end = max(c[x][0] for c in curves), min(c[x][-1] for c in curves)
    grid = np.linspace(start, end, points) if end > start else np.array([end])
    ys = np.stack([np.interp(grid, c[x], c["value"]) for c in curves])  # seeds x grid
    # The bootstrap resamples seed indices, and each draw takes whole curves: rliable given the
    # (seeds x grid) values would draw seeds afresh at every grid point, a band as jagged as
    # its noise. Same point estimate, same interval at any one point.
    seeds = np.arange(len(curves), dtype=float)
    iqm_of = lambda idx: _trim_mean(ys[idx.astype(int)])  # noqa: E731 (IQM per grid point)
    point, ci = aggregate_interval([seeds], reps, seed, func=iqm_of)
    return grid, point, ci[0], ci[1]


def _trim_mean(values: np.ndarray) -> np.ndarray:
    from scipy import stats
    return stats.trim_mean(values, 0.25, axis=0)  # what aggregate_iqm computes, per column


def game_of(env: str) -> str:
    """"Pong" for Pong-v5, ALE/Pong-v5 and PongNoFrameskip-v4: the key of a normalisation table."""
    name = env.rsplit("/", 1)[-1].split("-")[0]
    return name.removesuffix("NoFrameskip").removesuffix("Deterministic")


def load_normalization(spec: str) -> dict[str, tuple[float, float]]:
    """A built-in table (NORMALIZE_TABLES) or a JSON file {game: {"random", "reference"}}."""
    if spec in NORMALIZE_TABLES:
        return NORMALIZE_TABLES[spec]
    if not os.path.exists(spec):
        raise ValueError(f"--normalize {spec!r}: neither a built-in table "
                         f"({', '.join(NORMALIZE_TABLES)}) nor a JSON file")
    with open(spec) as f:
        raw = json.load(f)
    table = {}
    for game, entry in raw.items():
        try:
            low, high = float(entry["random"]), float(entry["reference"])
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"--normalize {spec}: entry {game!r} = {entry!r}; expected "
                             f'{{"random": <score>, "reference": <score>}}') from None
        if high == low:
            raise ValueError(f"--normalize {spec}: {game!r} has random == reference ({low})")
        table[game] = (low, high)
    return table


def normalize(scores: np.ndarray, env: str, table: dict[str, tuple[float, float]],
              spec: str = "table") -> np.ndarray:
    """Min-max normalised: (score - random) / (reference - random)."""
    game = env if env in table else game_of(env)
    if game not in table:
        raise ValueError(f"--normalize {spec}: no random/reference scores for env {env!r} "
                         f"(game {game!r}); the table has {', '.join(sorted(table))}")
    low, high = table[game]
    return (np.asarray(scores, float) - low) / (high - low)


def final_scores(groups: dict[tuple[str, str], list[str]],
                 metric: str) -> dict[tuple[str, str], np.ndarray]:
    """{(setting, env): final `metric` per seed}, runs without it left out (with a note)."""
    out = {}
    for key, runs in groups.items():
        values = []
        for run in runs:
            value = _runs.final_value(run, metric)
            if value is None:
                print(f"plot: {run} has no {metric!r} yet; left out", file=sys.stderr)
            else:
                values.append(value)
        if values:
            out[key] = np.asarray(values, float)
    return out


ALL_ENVS = "all envs"


def score_table(finals: dict[tuple[str, str], np.ndarray], reps: int = 2000, seed: int = 0,
                overall: bool = False) -> tuple[str, list[dict], list[str]]:
    """Markdown table of the final scores per (setting, env), its rows, and notes.

    `overall` adds, for each setting on several envs, an ALL_ENVS row: IQM over runs x envs
    (meaningful for normalised scores only)."""
    keys = sorted(finals)
    if overall:
        settings = sorted({s for s, _ in keys})
        keys += [(s, ALL_ENVS) for s in settings if sum(k[0] == s for k in finals) > 1]
    rows, notes = [], []
    for setting, env in keys:
        tasks = ([v for (s, _), v in sorted(finals.items()) if s == setting] if env == ALL_ENVS
                 else [finals[(setting, env)]])
        flat = np.concatenate(tasks)
        point, ci = aggregate_interval(tasks, reps, seed)
        n = min(len(t) for t in tasks)
        if n == 1:
            notes.append(f"{setting} on {env}: 1 seed, so no confidence interval; the IQM is "
                         f"that seed's score")
        elif n < 4:
            notes.append(f"{setting} on {env}: {n} seeds; below 4 the IQM trims nothing (it "
                         f"is the mean) and the bootstrap interval is optimistic")
        rows.append({"setting": setting, "env": env, "seeds": len(flat), "iqm": float(point[0]),
                     "ci_low": None if ci is None else float(ci[0, 0]),
                     "ci_high": None if ci is None else float(ci[1, 0]),
                     "median": float(np.median(flat)), "mean": float(np.mean(flat)),
                     "min": float(np.min(flat)), "max": float(np.max(flat))})
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    lines = ["| setting | env | seeds | IQM | 95% CI (stratified bootstrap) | median | mean | "
             "min | max |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ci = f"[{f(r['ci_low'])}, {f(r['ci_high'])}]" if r["ci_low"] is not None else "-"
        lines.append(f"| {r['setting']} | {r['env']} | {r['seeds']} | {f(r['iqm'])} | {ci} | "
                     + " | ".join(f(r[k]) for k in ("median", "mean", "min", "max")) + " |")
    return "\n".join(lines), rows, notes


def performance_profile(finals: dict[tuple[str, str], np.ndarray], taus: np.ndarray,
                        reps: int = 2000, seed: int = 0) -> tuple[dict, dict]:
    """({setting: profile}, {setting: (2, len(taus)) 95% CI}): the score distribution of
    Agarwal et al. (2021), the fraction of runs above tau, averaged over a setting's envs."""
    library, _ = _rliable()
    profiles, cis = {}, {}
    for setting in sorted({s for s, _ in finals}):
        tasks = [v for (s, _), v in sorted(finals.items()) if s == setting]
        with _seeded(seed):
            if len({len(t) for t in tasks}) == 1:  # runs x envs: rliable's own profile
                p, c = library.create_performance_profile(
                    {setting: np.stack(tasks, axis=1)}, taus, reps=reps)
            else:  # runs per env differ: each env's fraction, averaged (as above when equal)
                frac = lambda *ts: np.mean([(t[:, None] > taus).mean(0) for t in ts], 0)  # noqa
                p, c = library.get_interval_estimates({setting: tasks}, frac, reps=reps)
        profiles[setting], cis[setting] = p[setting], c[setting]
    return profiles, cis


def plot_profile(finals: dict[tuple[str, str], np.ndarray], output: str, xlabel: str,
                 reps: int = 2000, seed: int = 0, title: str = "") -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    values = np.concatenate(list(finals.values()))
    low, high = float(values.min()), float(values.max())
    pad = 0.05 * (high - low) or 1.0  # one distinct score: still a visible step
    taus = np.linspace(low - pad, high + pad, 101)
    profiles, cis = performance_profile(finals, taus, reps, seed)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    envs = sorted({e for _, e in finals})
    plot_utils.plot_performance_profiles(
        profiles, taus, performance_profile_cis=cis, ax=ax, xlabel=xlabel,
        ylabel=r"fraction of runs with score > $\tau$", labelsize="medium",
        ticklabelsize="medium")
    ax.legend(fontsize=8, loc="best")
    n = {s: sum(len(v) for (k, _), v in finals.items() if k == s) for s in profiles}
    ax.set_title(title or f"performance profile over {', '.join(envs)} ({min(n.values())}-"
                 f"{max(n.values())} runs per setting; 95% CI shaded)", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def plot_iqm(groups: dict[tuple[str, str], list[dict]], metric: str, output: str,
             title: str = "", axes: tuple[str, ...] = ("step", "time"), reps: int = 2000,
             seed: int = 0) -> str:
    """One row per env, one column per x axis; per setting the IQM over seeds, 95% CI shaded."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({e for _, e in groups})
    settings = sorted({s for s, _ in groups})
    fig, subplots = plt.subplots(len(envs), len(axes), squeeze=False,
                                 figsize=(6.5 * len(axes), 4.5 * len(envs)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, env in zip(subplots, envs):
        for ax, x in zip(row, axes):
            for i, setting in enumerate(settings):
                curves = groups.get((setting, env))
                if not curves:
                    continue
                grid, mid, low, high = iqm_band(curves, x, reps, seed)
                scale = 60.0 if x == "time" else 1.0
                color = colors[i % len(colors)]
                ax.plot(grid / scale, mid, color=color, label=f"{setting} (n={len(curves)})")
                if low is not None:
                    ax.fill_between(grid / scale, low, high, color=color, alpha=0.2,
                                    linewidth=0)
            if x == "time":
                ax.set_xlim(left=0)
            ax.set_xlabel(AXES[x])
            ax.set_ylabel(f"{metric}\n{env}")
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=8, loc="best")
    fig.suptitle(title or f"{metric}: IQM over seeds, 95% stratified-bootstrap CI shaded")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def _iqm_notes(groups: dict[tuple[str, str], list[dict]]) -> list[str]:
    notes = []
    for (setting, env), curves in sorted(groups.items()):
        if len(curves) == 1:
            notes.append(f"{setting} on {env}: 1 seed; drawn as that run, no confidence band")
            continue
        ends = [c["step"][-1] for c in curves]
        if min(ends) < max(ends):
            notes.append(f"{setting} on {env}: IQM curve ends at step {min(ends):,.0f}, where "
                         f"its shortest seed ends (longest: {max(ends):,.0f})")
    return notes


def plot(groups: dict[str, list[dict]], metric: str, output: str, title: str = "",
         axes: tuple[str, ...] = ("step", "time")) -> str:
    import matplotlib
    matplotlib.use("Agg")  # files only; no display needed (CI, SSH)
    import matplotlib.pyplot as plt

    fig, subplots = plt.subplots(1, len(axes), figsize=(6.5 * len(axes), 4.5), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, x in zip(subplots[0], axes):
        for i, (label, curves) in enumerate(sorted(groups.items())):
            grid, mean, low, high = seed_band(curves, x)
            if x == "time":
                grid = grid / 60.0
            color = colors[i % len(colors)]
            ax.plot(grid, mean, color=color, label=f"{label} (n={len(curves)})")
            if len(curves) > 1:
                ax.fill_between(grid, low, high, color=color, alpha=0.2, linewidth=0)
        if x == "time":
            ax.set_xlim(left=0)  # from the run's start: the gap before the first point is compile
        ax.set_xlabel(AXES[x])
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    subplots[0][0].legend(fontsize=8, loc="best")
    fig.suptitle(title or f"{metric}: mean over seeds, min-max shaded")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("paths", nargs="+", help="run dirs, or folders holding run dirs")
    p.add_argument("--metric", default="episode/return_mean", help="scalar to plot")
    p.add_argument("--output", default="",
                   help="PNG path (default: <first path>/curves.png)")
    p.add_argument("--x", default="step,time", help="x axes: step, time or step,time")
    p.add_argument("--title", default="")
    p.add_argument("--aggregate", default="mean", choices=AGGREGATES,
                   help="mean: mean over seeds, min-max shaded; iqm: interquartile mean over "
                        "seeds, 95%% stratified-bootstrap CI shaded, per setting and env")
    p.add_argument("--profile", default="", metavar="PNG",
                   help="also draw the performance profile of the final scores to this PNG")
    p.add_argument("--normalize", default="", metavar="TABLE",
                   help=f"min-max normalise final scores for the table and the profile: "
                        f"{', '.join(NORMALIZE_TABLES)} or a JSON file")
    p.add_argument("--table", action="store_true",
                   help="print the final-score table (implied by --aggregate iqm, --profile)")
    p.add_argument("--reps", type=int, default=2000,
                   help="bootstrap resamples (rliable uses 50000 for final intervals: slower)")
    p.add_argument("--bootstrap_seed", type=int, default=0)
    args = p.parse_args(argv)
    axes = tuple(a.strip() for a in args.x.split(","))
    bad = [a for a in axes if a not in AXES]
    if bad:
        p.error(f"--x: unknown axis {bad[0]!r}; allowed: {', '.join(AXES)}")
    if args.reps < 100:
        p.error(f"--reps={args.reps}: too few resamples for a 95% interval; use >= 100")
    try:
        table = load_normalization(args.normalize) if args.normalize else None
        runs = _runs.find_runs(args.paths)
    except (FileNotFoundError, ValueError) as e:
        p.error(str(e))
    if not runs:
        p.error(f"no run dirs (metrics.jsonl or events.out.tfevents.*) under {args.paths}")
    output = args.output or os.path.join(args.paths[0], "curves.png")
    boot = dict(reps=args.reps, seed=args.bootstrap_seed)
    if args.aggregate == "iqm":
        by_env = {}
        for key, dirs in group_runs(runs).items():
            curves = [c for c in (_runs.load_curve(d, args.metric) for d in dirs) if c]
            if curves:
                by_env[key] = curves
        if not by_env:
            p.error(f"none of the {len(runs)} runs logged {args.metric!r}")
        plot_iqm(by_env, args.metric, output, args.title, axes, **boot)
        for note in _iqm_notes(by_env):
            print(f"plot: note: {note}")
        n_runs, n_groups = sum(len(c) for c in by_env.values()), len(by_env)
    else:
        groups = group_curves(runs, args.metric)
        if not groups:
            p.error(f"none of the {len(runs)} runs logged {args.metric!r}")
        plot(groups, args.metric, output, args.title, axes)
        n_runs, n_groups = sum(len(c) for c in groups.values()), len(groups)
    print(f"plot: {n_runs} runs in {n_groups} setting(s) -> {output}")
    if args.aggregate == "iqm" or args.profile or args.table:
        finals = final_scores(group_runs(runs), args.metric)
        unit = args.metric
        if table is not None:
            try:
                finals = {k: normalize(v, k[1], table, args.normalize)
                          for k, v in finals.items()}
            except ValueError as e:
                p.error(str(e))
            unit = f"{args.metric} normalised ({args.normalize}: 0 random, 1 reference)"
        text, _, notes = score_table(finals, overall=table is not None, **boot)
        print(f"\nfinal {unit}, over seeds:\n\n{text}\n")
        for note in notes:
            print(f"note: {note}")
        if args.profile:
            plot_profile(finals, args.profile, unit, **boot)
            print(f"plot: performance profile of {sum(len(v) for v in finals.values())} runs "
                  f"-> {args.profile}")
    return output


if __name__ == "__main__":
    main()
