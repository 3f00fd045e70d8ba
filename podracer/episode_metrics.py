"""Episode metrics beside the return: per-step `info` fields an env reports (a crash flag, a
speed, a success flag), each reduced over a game (`max`, `mean`, `sum`, `last`) and logged per
finished game over the same window as the return, so `episode/crashed` of `crashed:max` is the
crash rate of the last games.

`env.episode_metrics` names them as "field:reduction,...", e.g. "crashed:max,speed:mean".
A field may name a nested entry with dots ("rewards.collision" is info["rewards"]["collision"]).
"rewards.*:sum" sums each term of a reward the env reports by name (info["rewards"]).
`parse` reads that text; `reported_fields` lists what an info dict holds; `resolve` expands the
wildcards against it and refuses a field the env does not report; `EpisodeAccumulator`
reduces the fields over the games of a batch of envs on the host (Sebulba's actors and
evaluation).
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

REDUCTIONS = ("max", "mean", "sum", "last")
AUTO = "auto"  # the fields of JUDGED that an env declares it reports
# What a policy is commonly judged by, where an env reports it (highway-env, gymnasium
# robotics): the crash rate, the success rate, the mean speed.
JUDGED = (("crashed", "max"), ("is_success", "max"), ("speed", "mean"))
# The names EpisodeStats logs for every run (podracer/logging.py): a metric may not take them.
BUILT_IN = ("return_mean", "return_max", "return_best_mean", "length_mean", "count")


class Bins(NamedTuple):
    """How the games are grouped by a metric's value (a drawn scenario field): a game whose
    value v has `searchsorted(edges, v, "right") == i` is in bin `labels[i]`."""

    edges: tuple[float, ...]  # the inner edges, ascending (len(labels) - 1 of them)
    labels: tuple[str, ...]   # each bin's name in the logged keys

    def index(self, values: np.ndarray) -> np.ndarray:
        """Each value's bin."""
        return np.searchsorted(np.asarray(self.edges, np.float64), values, side="right")


class EpisodeMetric(NamedTuple):
    field: str      # the info entry, dotted for a nested one
    reduction: str  # one of REDUCTIONS
    name: str       # logged as episode/<name>
    bins: Bins | None = None  # the games are also summarised per bin of this metric


def judged(reported: Sequence[str]) -> tuple[EpisodeMetric, ...]:
    """The metrics "auto" stands for: each of JUDGED whose field is in `reported`."""
    return _named([(f, r) for f, r in JUDGED if f in reported])


def parse(text: str) -> tuple[EpisodeMetric, ...]:
    """The metrics of "field:reduction,..." ("" = none). Raises ValueError naming the bad
    entry and what is allowed. A field given twice is named `<field>_<reduction>`; a nested
    field's dots become slashes in its name (TensorBoard groups by them). A field
    "<prefix>.*" stands for every field under `prefix` (e.g. "rewards.*:sum", each reward
    term), expanded by `resolve` once the env's fields are known. "auto" parses to none here:
    `judged` resolves it against the env."""
    if str(text).strip() == AUTO:
        return ()
    pairs = []
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        field, sep, reduction = (s.strip() for s in item.rpartition(":"))
        if not sep or not field:
            raise ValueError(f"episode metric {item!r}: write field:reduction, e.g. "
                             f"crashed:max (reductions: {', '.join(REDUCTIONS)}).")
        if reduction not in REDUCTIONS:
            raise ValueError(f"episode metric {item!r}: reduction {reduction!r} is not one of "
                             f"{', '.join(REDUCTIONS)}.")
        if "*" in field and (not field.endswith(".*") or "*" in field[:-2]):
            raise ValueError(f"episode metric {item!r}: a wildcard stands for a whole level "
                             f"at the end only, as in rewards.*:sum.")
        if (field, reduction) in pairs:
            raise ValueError(f"episode metric {item!r} is given twice.")
        pairs.append((field, reduction))
    return _named(pairs)


def _named(pairs: Sequence[tuple[str, str]]) -> tuple[EpisodeMetric, ...]:
    fields = [f for f, _ in pairs]
    out = []
    for field, reduction in pairs:
        name = field.replace(".", "/")
        if fields.count(field) > 1:
            name = f"{name}_{reduction}"
        if name in BUILT_IN:
            raise ValueError(f"episode metric {field}:{reduction} would be logged as "
                             f"episode/{name}, which the return statistics use; rename it.")
        out.append(EpisodeMetric(field, reduction, name))
    return tuple(out)


def reported_fields(info: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The dotted names of an info dict's entries (nested dicts are walked); gymnasium's
    "_<key>" masks are left out."""
    out: list[str] = []

    def walk(d: Mapping[str, Any], prefix: str) -> None:
        for key, value in d.items():
            if str(key).startswith("_"):
                continue
            name = f"{prefix}{key}"
            if isinstance(value, Mapping):
                walk(value, f"{name}.")
            else:
                out.append(name)

    if info:
        walk(info, "")
    return tuple(out)


def scalar_fields(info_shapes: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The dotted names of the entries of one env's info structure that hold one number (what
    a metric can reduce): its leaves of size 1, from `jax.eval_shape` of a JAX env's step
    (anything with a `shape`)."""
    def size(name: str) -> int:
        node: Any = info_shapes
        for key in name.split("."):
            node = node[key]
        return int(np.prod(getattr(node, "shape", ())))
    return tuple(name for name in reported_fields(info_shapes) if size(name) == 1)


def chosen(text: str, reported: Sequence[str], where: str) -> tuple[EpisodeMetric, ...]:
    """The metrics an env.episode_metrics setting `text` stands for, given the fields `where`
    reports: "auto" takes the judged ones it reports; otherwise `parse` then `resolve`
    (ValueError naming a bad entry, or a field it does not report and those it does)."""
    if str(text).strip() == AUTO:
        return judged(reported)
    return resolve(parse(text), reported, where)


def jax_step_fields(env: Any, action: Any) -> tuple[str, ...]:
    """The dotted names of the scalar entries of a JAX env's step info (anakin/envs.py's API:
    `reset(key) -> state`, `step(key, state, action) -> (state, step)` with `step.info`), from
    the step's abstract evaluation: nothing runs. `action`: one env's action (arrays or
    ShapeDtypeStructs)."""
    import jax
    key = jax.random.key(0)
    state = jax.eval_shape(env.reset, key)
    _, step = jax.eval_shape(env.step, key, state, action)
    return scalar_fields(getattr(step, "info", None))


def resolve(metrics: Sequence[EpisodeMetric], reported: Sequence[str], where: str
            ) -> tuple[EpisodeMetric, ...]:
    """`metrics` with each "<prefix>.*" expanded to the fields under `prefix` that `where`
    reports. Raises ValueError naming the first metric whose field it does not report (or
    with nothing under a wildcard's prefix), and the fields it does report."""
    have = ", ".join(sorted(reported)) or "none"
    pairs: list[tuple[str, str]] = []
    for m in metrics:
        if m.field.endswith(".*"):
            prefix = m.field[:-1]
            found = [f for f in reported if f.startswith(prefix)]
            if not found:
                raise ValueError(f"episode metric {m.field}:{m.reduction}: {where} reports no "
                                 f"field under {prefix[:-1]!r} in its info; it reports: {have}.")
            pairs.extend((f, m.reduction) for f in found if (f, m.reduction) not in pairs)
        elif m.field not in reported:
            raise ValueError(f"episode metric {m.field}:{m.reduction}: {where} does not report "
                             f"a field {m.field!r} in its info; it reports: {have}.")
        elif (m.field, m.reduction) not in pairs:
            pairs.append((m.field, m.reduction))
    return _named(pairs)


def info_value(info: Mapping[str, Any] | None, field: str, n: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(values [n] float64, present [n] bool) of a dotted field of a batched info dict. A
    gymnasium vector env marks the envs that reported a key with "_<key>"; a field missing
    from this step's info is present nowhere."""
    node: Any = info
    mask = None
    for key in field.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return np.zeros(n), np.zeros(n, bool)
        if f"_{key}" in node:
            here = np.asarray(node[f"_{key}"], bool)
            mask = here if mask is None else mask & here
        node = node[key]
    values = np.broadcast_to(np.asarray(node, np.float64), (n,))
    present = np.ones(n, bool) if mask is None else np.broadcast_to(mask, (n,))
    return values, present


class EpisodeAccumulator:
    """Each metric of each env of a batch, reduced over the valid steps of its current game."""

    def __init__(self, metrics: Sequence[EpisodeMetric], n: int) -> None:
        self.metrics, self.n = tuple(metrics), n
        k = len(self.metrics)
        self._value = np.zeros((k, n))
        self._count = np.zeros((k, n), np.int64)  # steps that reported each field

    def update(self, info: Mapping[str, Any] | None, valid: np.ndarray) -> None:
        """One batched step: `valid` (bool [n]) marks envs whose step belongs to a game (not
        the reset step of the one-step-late autoreset)."""
        for j, m in enumerate(self.metrics):
            x, present = info_value(info, m.field, self.n)
            use = present & valid
            if not use.any():
                continue
            v, c = self._value[j], self._count[j]
            if m.reduction == "max":
                v[use] = np.where(c[use] > 0, np.maximum(v[use], x[use]), x[use])
            elif m.reduction == "last":
                v[use] = x[use]
            else:  # sum and mean both sum; mean divides at the game's end
                v[use] += x[use]
            c[use] += 1

    def finish(self, i: int) -> tuple[float, ...]:
        """Env i's game is over: its metrics (NaN for a field no step reported), then reset."""
        out = []
        for j, m in enumerate(self.metrics):
            c, v = self._count[j, i], self._value[j, i]
            if c == 0:
                out.append(float("nan"))
            else:
                out.append(float(v / c if m.reduction == "mean" else v))
        self._value[:, i] = 0.0
        self._count[:, i] = 0
        return tuple(out)


def metric_means(values: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each metric's mean over the games that reported it (NaN = not reported); a metric no
    game reported is left out."""
    out = {}
    for name, column in values.items():
        x = np.asarray(column, np.float64)
        x = x[np.isfinite(x)]
        if x.size:
            out[name] = float(x.mean())
    return out
