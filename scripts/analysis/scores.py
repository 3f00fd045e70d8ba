"""The statistics behind scripts/plot.py's aggregates (Agarwal et al. 2021, "Deep RL at the
edge of the statistical precipice", through their `rliable` package): IQM bands over seeds with
stratified-bootstrap intervals, final-score tables, performance profiles, and min-max score
normalisation. Pure functions of arrays; plot.py reads the runs and draws."""
from __future__ import annotations

import contextlib
import json
import os

import numpy as np


# Min-max normalisation tables: game -> (random score, reference score); 0 = random, 1 = ref.
NORMALIZE_TABLES = {
    # Mnih et al. 2015, "Human-level control through deep reinforcement learning", Nature 518,
    # Extended Data Table 2: random play and a professional human games tester (DQN reached
    # 132% on Pong and 1327% on Breakout of this range). Later papers (dqn_zoo, rliable's
    # Atari-57 data) use other human figures (Pong 14.6, Breakout 30.5): say which you used.
    "atari_nature": {"Pong": (-20.7, 9.3), "Breakout": (1.7, 31.8)},
}


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


def iqm_text(task_scores: list[np.ndarray]) -> str:
    """"IQM [low, high]" with two decimals: `aggregate_interval`'s IQM of the runs of
    `task_scores` and its 95% interval (the IQM alone for fewer than 2 runs)."""
    point, ci = aggregate_interval(task_scores)
    point = float(np.ravel(point)[0])
    if ci is None:
        return f"{point:.2f}"
    return f"{point:.2f} [{float(np.ravel(ci[0])[0]):.2f}, {float(np.ravel(ci[1])[0]):.2f}]"


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
