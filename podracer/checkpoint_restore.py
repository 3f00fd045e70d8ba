"""Restoring a checkpoint into a run: `restore` loads it into the structure of a fresh learner
state after checking that it fits (experiment, tree, shapes, dtypes; config changes named), and
falls back past damaged checkpoints; `load_params` and `config_from_metadata` serve evaluation.
`read` then `fit` are its two halves, for a run that must know the checkpoint's counters
before it builds the agent the state is fitted to (experiments/wiring/session.py).

`restore` from a run dir or a `checkpoints` dir falls back to the newest intact checkpoint with a
one-line warning; from an explicit checkpoint dir it fails, listing the intact ones.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Mapping

import jax
from flax import serialization

from podracer.checkpoint_format import DamagedCheckpointError, Progress, PyTree, describe
from podracer.checkpoint_read import (candidates, intact_siblings, is_checkpoint_dir,
                                      load_metadata, load_raw, resolve)


def check_compatible(saved: Mapping[str, list], expected: Mapping[str, list],
                     what: str = "this run's learner state", hint: str = "") -> None:
    """Raises ValueError listing paths missing on either side and shape/dtype differences."""
    lines = [f"only in the checkpoint: {p} {saved[p][0]}" for p in saved if p not in expected]
    lines += [f"only in {what}: {p} {expected[p][0]}" for p in expected if p not in saved]
    lines += [f"differs at {p}: checkpoint {tuple(saved[p][0])} {saved[p][1]}, "
              f"{what} {tuple(expected[p][0])} {expected[p][1]}"
              for p in expected if p in saved and list(saved[p]) != list(expected[p])]
    if lines:
        more = f"\n  ... and {len(lines) - 12} more" if len(lines) > 12 else ""
        raise ValueError(f"checkpoint does not fit {what} ({len(lines)} difference(s)):\n  "
                         + "\n  ".join(lines[:12]) + more + hint)


def config_diff(saved: Mapping, current: Mapping, prefix: str = "") -> list[str]:
    """'field: old -> new' for each config field that differs (nested dicts walked)."""
    out = []
    for k in sorted(set(saved) | set(current)):
        a, b = saved.get(k, "<absent>"), current.get(k, "<absent>")
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += config_diff(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k}: {a!r} -> {b!r}")
    return out


@dataclasses.dataclass
class Loaded:
    """A checkpoint read whole (`read`), not yet fitted into a learner state (`fit`): what a
    run needs to know before it builds its agent (the counters, the trained horizon)."""

    checkpoint: str  # the checkpoint dir read
    metadata: dict   # as saved
    raw: dict        # the saved arrays, as a nested dict
    damaged: list = dataclasses.field(default_factory=list)  # newer damaged ones skipped

    @property
    def updates(self) -> int:
        return int(self.metadata["updates"])

    @property
    def env_steps(self) -> int:
        return int(self.metadata["env_steps"])


def restore(path: str, template: PyTree, *, experiment: str | None = None,
            config: Mapping | None = None,
            check: Callable[[dict], None] | None = None) -> Progress:
    """Loads the checkpoint at `path` into the structure of `template`: `fit(read(path))`.

    `template` is the learner state a fresh run would start from (arrays or ShapeDtypeStructs,
    e.g. `jax.eval_shape(agent.init, key, obs)`). Raises ValueError, naming what differs, when
    the checkpoint is from another experiment or its tree structure, shapes or dtypes differ.
    `config` (the current config as a dict) only makes the error name the config changes.
    `check(metadata)` may refuse the checkpoint before its tree is compared (a ValueError), for
    what fits in shape but not in meaning (e.g. a population's members in another order).
    """
    return fit(read(path, experiment=experiment, check=check), template, config=config)


def read(path: str, *, experiment: str | None = None,
         check: Callable[[dict], None] | None = None) -> Loaded:
    """The checkpoint `path` means, read whole: its metadata (checked: the experiment, then
    `check(metadata)`, ValueError) and its arrays.

    Damaged checkpoints (unreadable files): for a run dir or a `checkpoints` dir, the newest
    intact one is read, with a one-line warning naming the damaged newer ones (listed in the
    result's `damaged`); for a checkpoint dir, DamagedCheckpointError names it and lists the
    intact checkpoints beside it.
    """
    found = candidates(path)
    if not found:
        resolve(path)  # raises FileNotFoundError naming what was looked for
    if is_checkpoint_dir(os.path.abspath(os.path.expanduser(path))):
        try:
            return _read_one(found[0], experiment, check)
        except DamagedCheckpointError as e:
            raise DamagedCheckpointError(e.checkpoint, e.cause, intact_siblings(found[0])) from e
    damaged: list[DamagedCheckpointError] = []
    for ckpt in found:
        try:
            loaded = _read_one(ckpt, experiment, check)
        except DamagedCheckpointError as e:
            damaged.append(e)
            continue
        if damaged:
            print(f"warning: damaged checkpoint(s) skipped: "
                  f"{'; '.join(f'{e.checkpoint} ({e.cause[:120]})' for e in damaged)}; "
                  f"resuming from the newest intact one, {ckpt}", flush=True)
        loaded.damaged = [e.checkpoint for e in damaged]
        return loaded
    raise DamagedCheckpointError(
        damaged[0].checkpoint, f"{damaged[0].cause}; all {len(damaged)} checkpoint(s) under "
        f"{os.path.abspath(path)} are damaged: {', '.join(e.checkpoint for e in damaged)}",
        intact=[])


def _read_one(ckpt: str, experiment: str | None,
              check: Callable[[dict], None] | None) -> Loaded:
    meta = load_metadata(ckpt)
    if experiment is not None and meta.get("experiment") not in (None, experiment):
        raise ValueError(f"checkpoint {ckpt} was written by experiment "
                         f"{meta['experiment']!r}; this run is {experiment!r}.")
    if check is not None:
        check(meta)
    raw, _ = load_raw(ckpt)
    return Loaded(ckpt, meta, raw)


def fit(loaded: Loaded, template: PyTree, *, config: Mapping | None = None) -> Progress:
    """The learner state of `template`'s structure from a read checkpoint (ValueError naming
    what differs: tree, shapes, dtypes, with the config fields changed since)."""
    meta = loaded.metadata
    changed = [d for d in config_diff(meta.get("config", {}), config or {})
               if not d.startswith("resume:")]
    hint = ("\n  config fields changed since the checkpoint: " + "; ".join(changed)
            if changed else "")
    check_compatible(meta["tree"], describe(template), hint=hint)
    state = loaded.raw
    for path_, impl in meta.get("key_impls", {}).items():
        *parents, leaf = path_.split("/")
        node = state
        for k in parents:
            node = node[k]
        node[leaf] = jax.random.wrap_key_data(node[leaf], impl=impl)
    state = serialization.from_state_dict(template, state)
    return Progress(state, loaded.env_steps, loaded.updates, meta.get("episodes") or {}, meta,
                    damaged=list(loaded.damaged), checkpoint=loaded.checkpoint)


def load_params(path: str) -> tuple[PyTree, dict]:
    """(the learner state's `params` as nested numpy dicts, metadata), for evaluation."""
    state, meta = load_raw(path)
    if "params" not in state:
        raise ValueError(f"checkpoint {resolve(path)} has no 'params' in its learner state "
                         f"(top-level fields: {sorted(state)}); evaluate/render need one.")
    return state["params"], meta


def config_from_metadata(meta: Mapping) -> Any:
    """The run's ml_collections ConfigDict, as saved in the checkpoint."""
    import ml_collections
    if "config" not in meta:
        raise ValueError("checkpoint metadata has no 'config'.")
    return ml_collections.ConfigDict(meta["config"])
