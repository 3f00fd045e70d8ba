"""Reading finished and running run directories, for scripts/sweep.py and scripts/plot.py.

A run directory (experiments/wiring/run.py) holds config.json, metrics.jsonl, TensorBoard event
files and, once training ended, summary.json. A sweep adds sweep_run.json (its setting and seed)
and train.log. Nothing here imports JAX, so the table and the plots are quick to make.
"""
from __future__ import annotations

import glob
import json
import math
import os
from typing import Any, Iterable

import numpy as np

SWEEP_RUN_FILE = "sweep_run.json"  # written by sweep.py into each run dir it launches
# Config fields that differ between runs without making them different settings.
NOT_A_SETTING = ("seed", "run_dir", "resume", "console_every_s", "distributed.",
                 "checkpoint_", "stall_warning_s", "join_timeout_s", "wandb.")
ENV_FIELD = "env.name"  # the game or task: plot.py's aggregates group by it apart from settings


def read_json(path: str) -> Any | None:
    """The parsed file, or None when it is missing or half-written (a run still going)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def is_run_dir(path: str) -> bool:
    return (os.path.exists(os.path.join(path, "metrics.jsonl"))
            or bool(glob.glob(os.path.join(path, "events.out.tfevents.*"))))


def find_runs(paths: Iterable[str]) -> list[str]:
    """Run dirs among `paths` and below them (sorted, each once)."""
    found: set[str] = set()
    for path in paths:
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{path}: not a directory")
        for root, dirs, _ in os.walk(path):
            dirs[:] = [d for d in dirs if d != "checkpoints"]  # orbax trees are large
            if is_run_dir(root):
                found.add(os.path.normpath(root))
    return sorted(found)


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def labels(run_dirs: list[str], exclude: tuple[str, ...] = ()) -> dict[str, str]:
    """A setting label per run: the sweep's, else the config fields that differ between runs.

    Runs whose configs differ only in NOT_A_SETTING fields (seed, run dir ...) share a label,
    so their curves are one setting with a seed spread. Runs without config.json keep their
    directory name. Fields in `exclude` (e.g. ENV_FIELD) are left out of the labels too.
    """
    out: dict[str, str] = {}
    configs: dict[str, dict] = {}
    for run in run_dirs:
        meta = read_json(os.path.join(run, SWEEP_RUN_FILE))
        config = read_json(os.path.join(run, "config.json"))
        if meta is not None:
            overrides = {k: v for k, v in meta.get("overrides", {}).items() if k not in exclude}
            out[run] = (" ".join(f"{k}={v}" for k, v in overrides.items()) or "base"
                        if exclude else meta["label"])
        elif config is not None:
            configs[run] = {k: v for k, v in flatten(config).items()
                            if not k.startswith(NOT_A_SETTING + exclude)}
        else:
            out[run] = os.path.basename(run)
    keys = sorted({k for c in configs.values() for k in c})
    varying = [k for k in keys if len({json.dumps(c.get(k)) for c in configs.values()}) > 1]
    # Nothing varies: one run is named by its directory; several are one setting's seeds.
    same = os.path.basename(next(iter(configs))) if len(configs) == 1 else "all runs"
    for run, c in configs.items():
        out[run] = " ".join(f"{k}={_value_text(c.get(k))}" for k in varying) or same
    return out


def _value_text(value: Any) -> str:
    """A config value as a legend shows it: floats to 12 significant digits, so a product
    such as 3 * 2e-4 reads 0.0006 and not Python's repr 0.0006000000000000001."""
    return f"{value:.12g}" if isinstance(value, float) else str(value)


def parse_names(specs: Iterable[str]) -> dict[str, str]:
    """{path: legend text} from PATH=TEXT specs (plot.py --label), the path normalised."""
    names: dict[str, str] = {}
    for spec in specs:
        path, sep, text = spec.partition("=")
        if not sep or not path or not text.strip():
            raise ValueError(f"--label {spec!r}: expected PATH=TEXT (a run dir or a folder of "
                             f"run dirs, then the legend text)")
        names[os.path.normpath(path)] = text.strip()
    return names


def apply_names(labels_of: dict[str, str], names: dict[str, str]) -> dict[str, str]:
    """`labels_of` with each run under a named path (the path itself or below it) relabelled
    by that name; runs given the same name become one setting. A name that matches no run, or
    a run under two named paths, is an error naming them."""
    out = dict(labels_of)
    owner: dict[str, str] = {}
    for path, text in names.items():
        top = os.path.abspath(path)
        matched = [run for run in labels_of
                   if os.path.commonpath([top, os.path.abspath(run)]) == top]
        if not matched:
            raise ValueError(f"--label {path}={text}: no run dir is {path} or under it; run "
                             f"dirs: {', '.join(sorted(labels_of)) or 'none'}")
        for run in matched:
            if run in owner:
                raise ValueError(f"--label: run {run} is under both {owner[run]} and {path}; "
                                 f"name it once")
            owner[run] = path
            out[run] = text
    return out


def env_of(run_dir: str) -> str:
    """The run's env (config.json's env.name), "-" when it has no config.json."""
    config = read_json(os.path.join(run_dir, "config.json")) or {}
    return str(flatten(config).get(ENV_FIELD, "-"))


def final_value(run_dir: str, metric: str) -> float | None:
    """The run's final `metric`: summary.json's once it finished (the value the sweep table
    reports), else the last logged point (a run still going, or one from elsewhere)."""
    summary = read_json(os.path.join(run_dir, "summary.json")) or {}
    value = summary.get(metric)
    if value is not None and math.isfinite(float(value)):
        return float(value)
    curve = load_curve(run_dir, metric)
    return None if curve is None else float(curve["value"][-1])


def value_at(run_dir: str, metric: str, step: float) -> float | None:
    """`metric` at agent step `step`: the last point logged at or before it (a 100-game mean is
    logged with each update, so this is its value after the last update within `step`), or None
    when the run has not got there yet. A run has got there when it logged a point at or past
    `step`, or when its next point would be past it (one more logging interval, as between its
    last two points): a run of 10M steps in updates of 8,192 ends at 9,994,240, and is at 10M."""
    return curve_value_at(load_curve(run_dir, metric), step)


def curve_value_at(curve: dict[str, np.ndarray] | None, step: float) -> float | None:
    """`value_at` on a curve already loaded (`load_curve`'s dict, or None), for a caller that
    reads one run at many steps."""
    if curve is None or curve["step"][0] > step:
        return None
    steps = curve["step"]
    if steps[-1] < step and (len(steps) < 2 or 2 * steps[-1] - steps[-2] <= step):
        return None
    return float(curve["value"][np.searchsorted(curve["step"], step, side="right") - 1])


def load_curve(run_dir: str, metric: str) -> dict[str, np.ndarray] | None:
    """{"step", "time" (s of training, see `training_time`), "value"} of `metric`, or None if
    absent.

    metrics.jsonl first, TensorBoard event files when it is missing (e.g. runs from elsewhere).
    """
    steps, times, values = [], [], []
    jsonl = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(jsonl):
        with open(jsonl) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # the last line of a run still being written
                    continue
                if metric in row:
                    steps.append(row["step"])
                    times.append(row["time"])
                    values.append(row[metric])
    else:
        steps, times, values = _load_tensorboard(run_dir, metric)
    if not steps:
        return None
    return {"step": np.asarray(steps, float),
            "time": training_time(times, _event_file_stamps(run_dir)),
            "value": np.asarray(values, float)}


def training_time(times, starts) -> np.ndarray:
    """Seconds of training at each logged wall-clock time in `times` (in log order): the time
    since the run started, less the time between the pieces of a run continued with
    `--config.resume` (a run resumed the next day would otherwise jump by a night).

    `starts` are the start stamps of the run's pieces: each piece (each session of
    MetricsLogger) opens its own TensorBoard event file, named by the second its writer was
    created, which is before compilation, so each piece's start-up counts. Between two logged
    rows that a piece start falls between, only the time from that start to the later row
    counts; the rest (the earlier piece's end after its last row, the pause, the new process's
    imports, and the rows a crashed piece logged after its last checkpoint, which a resume
    drops) is left out. The first row counts from the newest start before it (a session that
    ended before its first update adds nothing); with none, from the first row itself.
    """
    t = np.asarray(times, float)
    starts = np.sort(np.asarray(starts, float))
    if not t.size:
        return t
    if not starts.size:
        return t - t[0]
    piece = np.searchsorted(starts, t, side="right") - 1  # the newest start at or before a row
    start = np.where(piece >= 0, starts[np.maximum(piece, 0)], t[0])
    opens = np.diff(piece, prepend=-2) != 0  # the first row of the run or of a new piece
    return np.cumsum(np.where(opens, t - start, np.diff(t, prepend=t[0])))


def _event_file_stamps(run_dir: str) -> list[float]:
    stamps = []
    for path in glob.glob(os.path.join(run_dir, "events.out.tfevents.*")):
        try:  # events.out.tfevents.<unix seconds>.<host>
            stamps.append(float(os.path.basename(path).split(".")[3]))
        except (IndexError, ValueError):
            pass
    return stamps


def _load_tensorboard(run_dir: str, metric: str) -> tuple[list, list, list]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})  # 0 = keep every point
    acc.Reload()
    if metric not in acc.Tags().get("scalars", []):
        return [], [], []
    events = acc.Scalars(metric)
    return ([e.step for e in events], [e.wall_time for e in events],
            [e.value for e in events])


# Seed statistics. With the handful of seeds a sweep affords, a percentile bootstrap of the
# mean is too narrow (it cannot see beyond the few values drawn), so the interval is Student's
# t, which is honest about small n (and very wide for n = 2).
def t_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Two-sided t confidence interval of the mean over seeds; None for fewer than 2."""
    from scipy import stats
    n = len(values)
    if n < 2:
        return None
    mean, sem = float(np.mean(values)), float(np.std(values, ddof=1)) / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sem
    return mean - half, mean + half


MIN_SEEDS_FOR_IQM = 4


def iqm(values: list[float]) -> float | None:
    """Interquartile mean (Agarwal et al. 2021): the mean of the middle 50% of seeds.

    It is what rliable's `metrics.aggregate_iqm` computes (scipy's trim_mean cutting 25% at
    each end), without adding rliable as a dependency for one line. Below 4 seeds nothing is
    trimmed, so it would only repeat the mean: None.
    """
    from scipy import stats
    if len(values) < MIN_SEEDS_FOR_IQM:
        return None
    return float(stats.trim_mean(values, 0.25))
