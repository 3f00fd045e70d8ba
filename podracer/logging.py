"""Metrics out: tensorboardX event files, a JSONL copy of the same scalars, a console line,
and optionally the same scalars and the config to Weights & Biases (config.wandb)."""
from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import sys
import threading
import time
from time import monotonic as _monotonic  # apart: tests fake `time`, the rows' clock
from typing import Mapping, Sequence

import numpy as np

from podracer.episode_metrics import BUILT_IN, Bins, EpisodeMetric, metric_means


@dataclasses.dataclass(frozen=True)
class WandbConfig:
    """The `config.wandb` section: Weights & Biases beside TensorBoard; off unless `project`
    is set."""

    project: str = ""                  # W&B project; "" = no W&B logging (the default)
    entity: str = ""                   # W&B user or team ("" = your default entity)
    group: str = ""                    # groups runs in the W&B UI, e.g. a sweep's name
    name: str = ""                     # run name ("" = the run dir's name)
    mode: str = ""                     # online | offline | disabled ("" = wandb's default)


_EPISODE_KEYS = tuple(f"episode/{name}" for name in BUILT_IN)
_BINNED = "episode/scenario_bins/"  # EpisodeStats' per-bin keys


class EpisodeStats:
    """Rolling window of finished games: true returns and lengths, and the values of each
    episode metric (env.episode_metrics, podracer/episode_metrics.py) by name. A game is
    (return, length, *metric values) in the order of `metrics`; a metric's summary is the
    mean over the window of the games that reported it (NaN = not reported).

    `bins` ({metric name: Bins}, a drawn scenario field's, podracer/scenarios.py) also
    summarises the window's games per bin of that metric's value, as
    `episode/scenario_bins/<field>/<bin>/{return_mean,length_mean,games,<metric>...}` (games:
    how many of the window's games fell in the bin)."""

    def __init__(self, window: int = 100, metrics: Sequence[str] = (),
                 bins: Mapping[str, Bins] | None = None) -> None:
        self.returns: collections.deque = collections.deque(maxlen=window)
        self.lengths: collections.deque = collections.deque(maxlen=window)
        self.metrics = {name: collections.deque(maxlen=window) for name in metrics}
        self.bins = dict(bins or {})
        unknown = set(self.bins) - set(self.metrics)
        if unknown:
            raise ValueError(f"bins of {sorted(unknown)}: not among the metrics {list(metrics)}.")
        self.total_episodes = 0
        self.best_mean = float("-inf")  # best rolling mean so far (full windows only)

    @classmethod
    def of(cls, metrics: Sequence[EpisodeMetric], window: int = 100) -> "EpisodeStats":
        """The statistics of a run's episode metrics (their names, and the bins they carry)."""
        return cls(window, tuple(m.name for m in metrics),
                   {m.name: m.bins for m in metrics if m.bins is not None})

    @classmethod
    def restored(cls, state: Mapping, bins: Mapping[str, Bins] | None = None
                 ) -> "EpisodeStats":
        """The statistics a state_dict holds, with the metrics it names (and `bins`)."""
        stats = cls(metrics=tuple(state.get("metrics", {})), bins=bins)
        stats.load_state_dict(state)
        return stats

    def add(self, episodes: Sequence[tuple]) -> None:
        columns = tuple(self.metrics.values())
        for ret, length, *values in episodes:
            self.returns.append(ret)
            self.lengths.append(length)
            for column, value in zip(columns, values):
                column.append(value)
        self.total_episodes += len(episodes)
        if len(self.returns) == self.returns.maxlen:
            self.best_mean = max(self.best_mean, float(np.mean(self.returns)))

    def state_dict(self) -> dict:
        """JSON-able state, so a resumed run's episode curves continue where they were."""
        state = {"returns": [float(r) for r in self.returns],
                 "lengths": [int(n) for n in self.lengths],
                 "total_episodes": self.total_episodes,
                 "best_mean": self.best_mean if np.isfinite(self.best_mean) else None}
        if self.metrics:  # NaN (a game that did not report the field) as null
            state["metrics"] = {name: [float(v) if np.isfinite(v) else None for v in column]
                                for name, column in self.metrics.items()}
        return state

    def load_state_dict(self, state: Mapping) -> None:
        """Restores `state`; of its metrics, those this run logs (a metric new to the run
        starts empty, one it no longer logs is dropped)."""
        self.returns.extend(state.get("returns", []))
        self.lengths.extend(state.get("lengths", []))
        saved = state.get("metrics", {})
        for name, column in self.metrics.items():
            column.extend(float("nan") if v is None else float(v) for v in saved.get(name, []))
        self.total_episodes = int(state.get("total_episodes", 0))
        best = state.get("best_mean")
        self.best_mean = float("-inf") if best is None else float(best)

    def recent(self) -> tuple[float, int, dict[str, float]]:
        """What a curriculum reads of the games (podracer/curriculum.TrainingProgress): the
        window's mean return (NaN before the first game), the games finished in all, and each
        metric's window mean (NaN where no game reported it), every metric named."""
        ret = float(np.mean(self.returns)) if self.returns else float("nan")
        means = metric_means(self.metrics)
        return ret, self.total_episodes, {n: means.get(n, float("nan")) for n in self.metrics}

    def summary(self) -> dict[str, float]:
        if not self.returns:
            return {}
        best = {"episode/return_best_mean": self.best_mean} if self.best_mean > -np.inf else {}
        out = {**best, "episode/return_mean": float(np.mean(self.returns)),
               "episode/return_max": float(np.max(self.returns)),
               "episode/length_mean": float(np.mean(self.lengths)),
               "episode/count": float(self.total_episodes)}
        out.update({f"episode/{n}": v for n, v in metric_means(self.metrics).items()})
        for name, grouping in self.bins.items():
            out.update(self._per_bin(name, grouping))
        return out

    def _per_bin(self, name: str, grouping: Bins) -> dict[str, float]:
        """The window's games grouped by the value of metric `name` (bins with no game are
        left out)."""
        values = np.asarray(self.metrics[name], np.float64)
        index = grouping.index(values)
        returns, lengths = np.asarray(self.returns), np.asarray(self.lengths)
        others = {n: np.asarray(c, np.float64) for n, c in self.metrics.items()
                  if n not in self.bins}  # not the other drawn fields: clutter
        field = name.split("/", 1)[1] if name.startswith("scenario/") else name
        out = {}
        for i, label in enumerate(grouping.labels):
            games = (index == i) & np.isfinite(values)
            if not games.any():
                continue
            key = f"{_BINNED}{field}/{label}"
            out[f"{key}/return_mean"] = float(returns[games].mean())
            out[f"{key}/length_mean"] = float(lengths[games].mean())
            out[f"{key}/games"] = float(games.sum())
            out.update({f"{key}/{n}": v for n, v in
                        metric_means({n: c[games] for n, c in others.items()}).items()})
        return out


class MetricsLogger:
    """Writes scalars to TensorBoard and `metrics.jsonl` in `run_dir`; prints progress lines.

    `resume_step`: the run continues from a checkpoint at this step, in the same run dir. Scalars
    an earlier session logged after it (between that checkpoint and a crash) are dropped, from
    `metrics.jsonl` and (via tensorboardX's purge_step) from TensorBoard, so curves continue
    without duplicated steps.
    """

    def __init__(self, run_dir: str, total_steps: int, console_every_s: float = 10.0,
                 enabled: bool = True, resume_step: int | None = None,
                 wandb_config: Mapping | None = None, run_config: Mapping | None = None) -> None:
        self.run_dir = run_dir
        self.total_steps = total_steps
        self.console_every_s = console_every_s
        self.enabled = enabled
        self._start = time.time()
        self._last_print = -math.inf
        self._writer = None
        self._jsonl = None
        self._lock = threading.Lock()  # the learner and a background evaluator both write
        self._close_hooks: list = []
        self._wandb = None  # a wandb Run when config.wandb.project is set (process 0 only)
        if enabled and wandb_config and wandb_config.get("project"):
            self._wandb = _start_wandb(wandb_config, run_dir, run_config or {}, resume_step)
        if enabled:
            from tensorboardX import SummaryWriter
            from tensorboardX.proto.summary_pb2 import Summary
            self._summary = Summary
            os.makedirs(run_dir, exist_ok=True)
            jsonl = os.path.join(run_dir, "metrics.jsonl")
            purge = None
            if resume_step is not None:
                purge = resume_step + 1
                _truncate_jsonl(jsonl, resume_step)
            # A deep queue: with the default (10) every add_scalar blocked on the writer thread
            # (CartPole: ~7 ms of the learner thread per update, GIL taken from the actors).
            self._writer = SummaryWriter(run_dir, flush_secs=10, purge_step=purge,
                                         max_queue=4096, filename_suffix=_session_suffix())
            # Block-buffered, flushed at most `_JSONL_FLUSH_S` apart and on close: a line
            # buffer made a write syscall per row (~57 us of the main thread; an Anakin update
            # of CartPole takes ~5 ms). A reader (plot.py, a script tailing the run) sees rows
            # within that time; a killed process loses at most that much of the file.
            self._jsonl = open(jsonl, "a")
            self._jsonl_flushed = _monotonic()

    def flush(self) -> None:
        """Writes what the files buffer (metrics.jsonl, TensorBoard's queue) to disk now."""
        with self._lock:
            if self._jsonl is not None:
                self._jsonl.flush()
                self._jsonl_flushed = _monotonic()
            if self._writer is not None:
                self._writer.flush()

    def on_close(self, hook) -> None:
        """Runs `hook()` first thing in close(): a writer in another thread finishes (or stops)
        before the files close."""
        self._close_hooks.append(hook)

    def write(self, step: int, scalars: Mapping[str, float], force_print: bool = False,
              console: bool = True) -> None:
        """Logs `scalars` at env step `step`; `console=False` keeps them off the progress line
        (e.g. evaluation results, which print their own)."""
        with self._lock:
            self._write(step, scalars, force_print, console)

    def _write(self, step: int, scalars: Mapping[str, float], force_print: bool,
               console: bool) -> None:
        scalars = {k: float(v) for k, v in scalars.items()}
        if self.enabled:
            # One TensorBoard event holding every scalar of the update (as TF's merged
            # summaries): add_scalar per scalar built an event each, plus a comet hook call,
            # ~1.6 ms of the learner's GIL time per update for ~35 scalars against ~0.07 ms
            # (CartPole IMPALA end to end was 20-35% faster without it). The file writer is
            # the one add_scalar itself writes through (tensorboardX, pinned in
            # requirements.txt); the values are the same float32 simple_values.
            value = self._summary.Value
            self._writer._get_file_writer().add_summary(
                self._summary(value=[value(tag=k, simple_value=v) for k, v in scalars.items()]),
                global_step=step)
            self._jsonl.write(json.dumps({"step": step, "time": time.time(), **scalars}) + "\n")
            if _monotonic() - self._jsonl_flushed >= _JSONL_FLUSH_S:
                self._jsonl.flush()
                self._jsonl_flushed = _monotonic()
            if self._wandb is not None:  # env_step is the x-axis (see _start_wandb)
                self._wandb.log({WANDB_STEP: step, **scalars})
        now = time.time()
        if not self.enabled or not console:
            return
        # console_every_s = inf: forced lines only (a population's quiet members).
        if force_print or (self.console_every_s < math.inf
                           and now - self._last_print >= self.console_every_s):
            self._last_print = now
            self._print(step, scalars, now - self._start)

    def _print(self, step: int, s: Mapping[str, float], elapsed: float) -> None:
        sps = s.get("sps", 0.0)
        # total_steps is the run's planned last step; never below 0 (once printed -1:59:59).
        eta = max(0, self.total_steps - step) / sps if sps > 0 else float("nan")
        ret = s.get("episode/return_mean", float("nan"))
        loss = s.get("loss/total", float("nan"))
        # The env.episode_metrics beside the return (episode/crashed -> "crashed 0.12"); the
        # per-scenario-bin summaries are for TensorBoard and metrics.jsonl only.
        extra = "".join(f"  {k[len('episode/'):]} {v:.3g}" for k, v in s.items()
                        if k.startswith("episode/") and k not in _EPISODE_KEYS
                        and not k.startswith(_BINNED))
        print(f"[{elapsed:7.0f}s] steps {step:>10,d}/{self.total_steps:,d}  "
              f"sps {sps:8.0f}  return {ret:8.2f}{extra}  loss {loss:8.4f}  "
              f"lag {s.get('policy_lag/mean', 0.0):4.1f}  eta {_fmt_time(eta)}",
              file=sys.stdout, flush=True)

    def close(self) -> None:
        """Closes the files (and W&B) once; a second call does nothing."""
        hooks, self._close_hooks = self._close_hooks, []
        for hook in hooks:
            hook()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        jsonl, self._jsonl = self._jsonl, None
        if jsonl is not None:
            jsonl.close()
        run, self._wandb = self._wandb, None
        if run is not None:
            run.finish()

    def __enter__(self) -> "MetricsLogger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _session_suffix() -> str:
    """A suffix that gives each logger session its own TensorBoard event file, in start order.

    tensorboardX names the file `events.out.tfevents.<whole seconds>.<host>` and opens it with
    "wb": a resumed session that started within the same second as the previous one truncated
    that session's file, and every scalar it had logged was gone (tests/sebulba/test_logging.py).
    TensorBoard reads a dir's event files in sorted name order, and purge_step relies on the
    resumed session's file coming last, so the suffix is the start time in nanoseconds
    (fixed width: it sorts as it counts), then the pid.
    """
    return f".{time.time_ns():020d}.{os.getpid()}"


def _truncate_jsonl(path: str, last_step: int) -> None:
    """Keeps the lines of `path` with step <= last_step (atomically: write, then rename)."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        keep = [line for line in f if line.strip() and json.loads(line)["step"] <= last_step]
    with open(path + ".tmp", "w") as f:
        f.writelines(keep)
    os.replace(path + ".tmp", path)


def _fmt_time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--"
    if seconds < 0:  # divmod(-1, 3600) would print "-1:59:59"
        return "0:00:00"
    h, rem = divmod(int(seconds), 3600)
    return f"{h:d}:{rem // 60:02d}:{rem % 60:02d}"


_JSONL_FLUSH_S = 1.0  # metrics.jsonl reaches the disk at most this long after a row

WANDB_STEP = "env_step"  # W&B's x-axis for every scalar: the same env step as TensorBoard's
WANDB_MODES = ("", "online", "offline", "disabled")  # "" = wandb's default (or WANDB_MODE)


def _start_wandb(settings: Mapping, run_dir: str, run_config: Mapping,
                 resume_step: int | None):
    """A Weights & Biases run logging the config, for MetricsLogger's scalars (config.wandb).

    wandb is imported only here, so runs without W&B need not install it. Scalars are logged
    against `env_step` (define_metric) rather than wandb's own `step`, which must increase
    with every call: the background evaluator logs at env steps the learner has passed. The
    run id is kept in <run_dir>/wandb_run_id, so a resumed run continues the same W&B run.
    Each call makes a run of its own, beside any other active in the process (a population's
    members log from one process: wandb's default would hand every later call the first run).
    Its files go to $WANDB_DIR if set, else <run_dir>/wandb. Bad settings and a missing wandb
    raise ConfigError, which the command line prints as one message.
    """
    from podracer.validation import ConfigError
    mode = settings.get("mode", "")
    if mode not in WANDB_MODES:
        raise ConfigError(f"wandb.mode={mode!r}: allowed {', '.join(map(repr, WANDB_MODES))}")
    try:
        import wandb
    except ImportError as e:
        raise ConfigError(f"wandb.project={settings['project']!r} logs to Weights & Biases, "
                          f"but the wandb package is not installed ({e}): pip install "
                          f"wandb==0.31.0, or leave --config.wandb.project empty") from None
    id_file = os.path.join(run_dir, "wandb_run_id")
    os.makedirs(run_dir, exist_ok=True)
    run_id = None
    if resume_step is not None and os.path.exists(id_file):
        with open(id_file) as f:
            run_id = f.read().strip() or None
    run = wandb.init(project=settings["project"], entity=settings.get("entity") or None,
                     group=settings.get("group") or None,
                     name=settings.get("name") or os.path.basename(os.path.normpath(run_dir)),
                     mode=mode or None, config=dict(run_config),
                     dir=None if os.environ.get("WANDB_DIR") else run_dir,
                     id=run_id, resume="allow" if run_id else None, reinit="create_new")
    run.define_metric(WANDB_STEP)
    run.define_metric("*", step_metric=WANDB_STEP)
    with open(id_file, "w") as f:
        f.write(run.id)
    return run
