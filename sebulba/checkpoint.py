"""Checkpoints of a training run (orbax-checkpoint on local disk): save, find, check, restore.

A checkpoint is the agent's whole learner state, saved generically (whatever pytree the agent's
`init` returns: params, optimiser state, normaliser statistics, RNG keys, ...), plus JSON
metadata: experiment name, env-step and update counters, the episode-statistics window, the seed
and the full config. Layout, under `<run_dir>/checkpoints/<update>/`:
    state/   the learner state in flax's state-dict form (nested dicts keyed by field name)
    meta/    the JSON metadata (see `Checkpointer.save`); also the tree's paths, shapes, dtypes
The state is copied to the host before saving, because the runtime donates the device buffers to
the next update; orbax then writes it in the background while training goes on.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Any, Mapping

import jax
import numpy as np
from flax import serialization

PyTree = Any
FORMAT_VERSION = 1
_ITEMS = ("state", "meta")


@dataclasses.dataclass
class Progress:
    """Where a run stands: what a checkpoint holds and what `train(resume=...)` continues from."""

    learner_state: PyTree
    env_steps: int = 0
    updates: int = 0
    episodes: dict = dataclasses.field(default_factory=dict)  # EpisodeStats.state_dict()
    metadata: dict = dataclasses.field(default_factory=dict)  # as saved (restore only)


class _OrbaxInfoFilter(logging.Filter):
    """Orbax logs each step of every save at INFO (through absl): keep its warnings only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or "orbax" not in record.pathname


def _import_orbax():
    import orbax.checkpoint as ocp  # slow import (seconds): only when checkpoints are used
    absl_logger = logging.getLogger("absl")
    if not any(isinstance(f, _OrbaxInfoFilter) for f in absl_logger.filters):
        absl_logger.addFilter(_OrbaxInfoFilter())
    return ocp


def _single_process(ocp):
    """Orbax options for reading/writing from this process alone: only process 0 saves (the
    state is replicated) and each process reads on its own, so no cross-host barriers."""
    me = jax.process_index()
    return ocp.options.MultiprocessingOptions(primary_host=me, active_processes={me})


def _to_host(x: Any) -> Any:
    """This process's copy of a replicated array as numpy (keys as raw uint32 key data)."""
    if isinstance(x, jax.Array):
        x = x.addressable_shards[0].data  # the whole array: the learner state is replicated
        if _is_key(x):
            x = jax.random.key_data(x)
    return np.asarray(x)


def _is_key(x: Any) -> bool:
    return jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key)


def _flatten(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    """{"a/b/c": leaf} for a nested-dict state dict; empty dicts (e.g. optax.EmptyState) vanish."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, path + "/"))
        else:
            out[path] = v
    return out


def describe(learner_state: PyTree) -> dict[str, list]:
    """{path: [shape, dtype]} of a learner state (arrays or ShapeDtypeStructs) as saved."""
    flat = _flatten(serialization.to_state_dict(learner_state))
    out = {}
    for path, x in flat.items():
        if _is_key(x):  # saved as raw key data (uint32)
            x = jax.eval_shape(jax.random.key_data, x)
        out[path] = [list(np.shape(x)), str(np.dtype(x.dtype))]
    return out


class Checkpointer:
    """Saves every `every_updates` updates and/or `every_minutes`, keeping the newest `keep`.

    `metadata` (experiment name, config, seed) goes into every checkpoint. The runtime calls
    `after_update` after each update and `close` once at the end (final save).
    """

    def __init__(self, directory: str, *, every_updates: int = 0, every_minutes: float = 0.0,
                 keep: int = 3, metadata: Mapping[str, Any] | None = None) -> None:
        if keep < 1:
            raise ValueError(f"keep={keep}: must be >= 1 (set checkpoint_keep=0 in the config "
                             f"to disable checkpoints instead).")
        if every_updates < 0 or every_minutes < 0:
            raise ValueError(f"every_updates={every_updates}, every_minutes={every_minutes}: "
                             f"must be >= 0 (0 = off).")
        self._ocp = ocp = _import_orbax()
        self.directory = os.path.abspath(directory)
        self.every_updates, self.every_minutes = every_updates, every_minutes
        self.metadata = dict(metadata or {})
        os.makedirs(self.directory, exist_ok=True)  # orbax can't with active_processes set
        self._mgr = ocp.CheckpointManager(
            self.directory, item_names=_ITEMS, options=ocp.CheckpointManagerOptions(
                max_to_keep=keep, create=False, multiprocessing_options=_single_process(ocp)))
        self._last_time = time.monotonic()
        self.last_saved: int | None = self._mgr.latest_step()

    def after_update(self, progress: Progress) -> bool:
        """Saves if an interval has passed; returns whether it saved."""
        by_count = self.every_updates > 0 and progress.updates % self.every_updates == 0
        by_time = (self.every_minutes > 0
                   and time.monotonic() - self._last_time >= 60 * self.every_minutes)
        if by_count or by_time:
            self.save(progress)
        return by_count or by_time

    def save(self, progress: Progress) -> str:
        """Writes a checkpoint for `progress.updates` (in the background); returns its path."""
        if self.last_saved is not None and progress.updates <= self.last_saved:
            return self.path(progress.updates)  # e.g. a final save right after a periodic one
        # Keys become raw uint32 data (key arrays are not plain arrays); restore re-wraps them.
        host = jax.tree.map(_to_host, progress.learner_state)
        key_impls = {p: str(jax.random.key_impl(x)) for p, x in _flatten(
            serialization.to_state_dict(progress.learner_state)).items() if _is_key(x)}
        meta = {**self.metadata, "format_version": FORMAT_VERSION,
                "env_steps": int(progress.env_steps), "updates": int(progress.updates),
                "episodes": progress.episodes, "saved_at": time.time(),
                "tree": describe(progress.learner_state), "key_impls": key_impls}
        ocp = self._ocp
        self._mgr.save(progress.updates, args=ocp.args.Composite(
            state=ocp.args.StandardSave(serialization.to_state_dict(host)),
            meta=ocp.args.JsonSave(meta)))
        self.last_saved = progress.updates
        self._last_time = time.monotonic()
        return self.path(progress.updates)

    def path(self, updates: int) -> str:
        return os.path.join(self.directory, str(updates))

    def close(self, final: Progress | None = None) -> str | None:
        """Saves `final` (unless already saved), waits for pending writes; returns its path."""
        path = None
        try:
            if final is not None:
                path = self.save(final)
                print(f"checkpoint: {path}", flush=True)
            self._mgr.wait_until_finished()
        finally:
            self._mgr.close()
        return path


def resolve(path: str) -> str:
    """The checkpoint a user means: a checkpoint dir, a `checkpoints` dir or a run dir (newest).

    Raises FileNotFoundError naming the path and what was looked for.
    """
    path = os.path.abspath(os.path.expanduser(path))
    if all(os.path.isdir(os.path.join(path, item)) for item in _ITEMS):
        return path
    for ckpt_dir in (os.path.join(path, "checkpoints"), path):
        steps = list_steps(ckpt_dir)
        if steps:
            return os.path.join(ckpt_dir, str(steps[-1]))
    raise FileNotFoundError(
        f"no checkpoint at {path!r}: expected a run dir with checkpoints/<update>/, a "
        f"checkpoints dir, or a checkpoint dir holding {'/ and '.join(_ITEMS)}/.")


def list_steps(ckpt_dir: str) -> list[int]:
    """Finished checkpoints (orbax writes to a temporary name, then renames), oldest first."""
    if not os.path.isdir(ckpt_dir):
        return []
    return sorted(int(n) for n in os.listdir(ckpt_dir) if n.isdigit()
                  and all(os.path.isdir(os.path.join(ckpt_dir, n, i)) for i in _ITEMS))


def run_dir_of(checkpoint: str) -> str | None:
    """The run dir a checkpoint belongs to (`<run_dir>/checkpoints/<update>`), if laid out so."""
    parent = os.path.dirname(os.path.abspath(checkpoint))
    return os.path.dirname(parent) if os.path.basename(parent) == "checkpoints" else None


def load_metadata(path: str) -> dict:
    """The JSON metadata of the checkpoint `path` resolves to (cheap: no arrays are read)."""
    ocp = _import_orbax()
    ckpt = resolve(path)
    reader = ocp.Checkpointer(ocp.JsonCheckpointHandler(),
                              multiprocessing_options=_single_process(ocp))
    return reader.restore(os.path.join(ckpt, "meta"))


def load_raw(path: str) -> tuple[dict, dict]:
    """(learner state as a nested dict of numpy arrays, metadata); no structure check."""
    ocp = _import_orbax()
    ckpt = resolve(path)
    reader = ocp.StandardCheckpointer(multiprocessing_options=_single_process(ocp))
    state = reader.restore(os.path.join(ckpt, "state"))
    return state, load_metadata(ckpt)


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


def restore(path: str, template: PyTree, *, experiment: str | None = None,
            config: Mapping | None = None) -> Progress:
    """Loads the checkpoint at `path` into the structure of `template`.

    `template` is the learner state a fresh run would start from (arrays or ShapeDtypeStructs,
    e.g. `jax.eval_shape(agent.init, key, obs)`). Raises ValueError, naming what differs, when
    the checkpoint is from another experiment or its tree structure, shapes or dtypes differ.
    `config` (the current config as a dict) only makes the error name the config changes.
    """
    ckpt = resolve(path)
    meta = load_metadata(ckpt)
    if experiment is not None and meta.get("experiment") not in (None, experiment):
        raise ValueError(f"checkpoint {ckpt} was written by experiment "
                         f"{meta['experiment']!r}; this run is {experiment!r}.")
    changed = [d for d in config_diff(meta.get("config", {}), config or {})
               if not d.startswith("resume:")]
    hint = ("\n  config fields changed since the checkpoint: " + "; ".join(changed)
            if changed else "")
    check_compatible(meta["tree"], describe(template), hint=hint)
    state, _ = load_raw(ckpt)
    for path_, impl in meta.get("key_impls", {}).items():
        *parents, leaf = path_.split("/")
        node = state
        for k in parents:
            node = node[k]
        node[leaf] = jax.random.wrap_key_data(node[leaf], impl=impl)
    state = serialization.from_state_dict(template, state)
    return Progress(state, int(meta["env_steps"]), int(meta["updates"]),
                    meta.get("episodes") or {}, meta)


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
