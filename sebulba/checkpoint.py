"""Checkpoints of a training run (orbax-checkpoint on local disk): save, find, check, restore.

A checkpoint is the agent's whole learner state, saved generically (whatever pytree the agent's
`init` returns: params, optimiser state, normaliser statistics, RNG keys, ...), plus JSON
metadata: experiment name, env-step and update counters, the episode-statistics window, the seed
and the full config. Layout, under `<run_dir>/checkpoints/<update>/`:
    state/   the learner state in flax's state-dict form (nested dicts keyed by field name)
    meta/    the JSON metadata (see `Checkpointer.save`); also the tree's paths, shapes, dtypes
The state is copied to the host before saving, because the runtime donates the device buffers to
the next update; orbax then writes it in the background while training goes on.

A checkpoint whose files cannot be read (a truncated `meta/metadata`, a damaged tensorstore data
file, e.g. after a full disk or a copy cut short) raises `DamagedCheckpointError` naming it.
`restore` from a run dir or a `checkpoints` dir falls back to the newest intact checkpoint with a
one-line warning; from an explicit checkpoint dir it fails, listing the intact ones.
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
_REQUIRED_META = ("tree", "env_steps", "updates")
DAMAGED_PREFIX = "damaged-"  # damaged checkpoints moved aside (see `move_aside`) get this name


class DamagedCheckpointError(ValueError):
    """A checkpoint's files cannot be read: the message names the checkpoint and the cause."""

    def __init__(self, checkpoint: str, cause: str, intact: list[str] | None = None) -> None:
        self.checkpoint, self.cause = checkpoint, cause
        msg = f"checkpoint {checkpoint} is damaged and cannot be read ({cause})"
        if intact is not None:
            msg += (f". Intact checkpoints: {', '.join(intact)}; resume from one of them, or "
                    f"from the run dir to take the newest intact one." if intact else
                    ". No intact checkpoint is left beside it.")
        super().__init__(msg)


@dataclasses.dataclass
class Progress:
    """Where a run stands: what a checkpoint holds and what `train(resume=...)` continues from."""

    learner_state: PyTree
    env_steps: int = 0
    updates: int = 0
    episodes: dict = dataclasses.field(default_factory=dict)  # EpisodeStats.state_dict()
    metadata: dict = dataclasses.field(default_factory=dict)  # as saved (restore only)
    damaged: list = dataclasses.field(default_factory=list)  # newer damaged ones (restore only)
    checkpoint: str = ""  # the checkpoint dir restored (restore only)


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
    if is_checkpoint_dir(path):
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


def _cause(e: BaseException) -> str:
    """An exception as one short line (tensorstore errors run to several hundred characters)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {text[:300]}{' ...' if len(text) > 300 else ''}"


def load_metadata(path: str) -> dict:
    """The JSON metadata of the checkpoint `path` resolves to (cheap: no arrays are read).

    Raises DamagedCheckpointError when it is unreadable or lacks the fields every save writes.
    """
    ocp = _import_orbax()
    ckpt = resolve(path)
    reader = ocp.Checkpointer(ocp.JsonCheckpointHandler(),
                              multiprocessing_options=_single_process(ocp))
    try:  # a truncated file raises json's JSONDecodeError, which names no path
        meta = reader.restore(os.path.join(ckpt, "meta"))
    except (ValueError, OSError) as e:
        raise DamagedCheckpointError(ckpt, f"meta/metadata: {_cause(e)}") from e
    missing = [k for k in _REQUIRED_META if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise DamagedCheckpointError(ckpt, f"meta/metadata lacks {missing}")
    return meta


def load_raw(path: str) -> tuple[dict, dict]:
    """(learner state as a nested dict of numpy arrays, metadata); no structure check.

    Raises DamagedCheckpointError when a file of the checkpoint cannot be read.
    """
    ocp = _import_orbax()
    ckpt = resolve(path)
    meta = load_metadata(ckpt)
    reader = ocp.StandardCheckpointer(multiprocessing_options=_single_process(ocp))
    try:  # tensorstore reports damaged data as ValueError("DATA_LOSS: ..."/"OUT_OF_RANGE: ...")
        state = reader.restore(os.path.join(ckpt, "state"))
    except (ValueError, OSError) as e:
        raise DamagedCheckpointError(ckpt, f"state/: {_cause(e)}") from e
    return state, meta


def is_checkpoint_dir(path: str) -> bool:
    """Whether `path` itself is one checkpoint (holds state/ and meta/), not a dir of them."""
    return all(os.path.isdir(os.path.join(path, item)) for item in _ITEMS)


def candidates(path: str) -> list[str]:
    """The checkpoints `path` may mean, newest first: itself if it is a checkpoint dir, else the
    finished checkpoints of its `checkpoints/` subdir (a run dir) or of itself."""
    path = os.path.abspath(os.path.expanduser(path))
    if is_checkpoint_dir(path):
        return [path]
    for ckpt_dir in (os.path.join(path, "checkpoints"), path):
        steps = list_steps(ckpt_dir)
        if steps:
            return [os.path.join(ckpt_dir, str(s)) for s in reversed(steps)]
    return []


def damage(ckpt: str) -> str | None:
    """Why the checkpoint `ckpt` cannot be read (reads it whole), or None when it is intact."""
    try:
        load_raw(ckpt)
    except DamagedCheckpointError as e:
        return e.cause
    return None


def _intact_siblings(ckpt: str) -> list[str]:
    """The intact checkpoints beside `ckpt` (in its parent dir), newest first."""
    return [c for c in candidates(os.path.dirname(ckpt)) if c != ckpt and damage(c) is None]


def check_metadata(ckpt: str) -> None:
    """Cheap early check of one checkpoint dir (its JSON metadata only): raises
    DamagedCheckpointError naming it and listing the intact checkpoints beside it."""
    try:
        load_metadata(ckpt)
    except DamagedCheckpointError as e:
        raise DamagedCheckpointError(e.checkpoint, e.cause, _intact_siblings(ckpt)) from e


def move_aside(ckpt: str) -> str:
    """Renames a damaged `<dir>/<update>` to `<dir>/damaged-<update>`, out of the way of
    `list_steps` and of orbax (a resumed run saves that update again); returns the new path."""
    parent, name = os.path.split(os.path.abspath(ckpt))
    target = os.path.join(parent, DAMAGED_PREFIX + name)
    n = 1
    while os.path.exists(target):  # the same update damaged twice: keep both
        target, n = os.path.join(parent, f"{DAMAGED_PREFIX}{name}.{n}"), n + 1
    os.rename(ckpt, target)
    return target


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

    Damaged checkpoints (unreadable files): for a run dir or a `checkpoints` dir, the newest
    intact one is restored, with a one-line warning naming the damaged newer ones (listed in
    the result's `damaged`); for a checkpoint dir, DamagedCheckpointError names it and lists
    the intact checkpoints beside it.
    """
    found = candidates(path)
    if not found:
        resolve(path)  # raises FileNotFoundError naming what was looked for
    if is_checkpoint_dir(os.path.abspath(os.path.expanduser(path))):
        try:
            return _restore_one(found[0], template, experiment, config)
        except DamagedCheckpointError as e:
            raise DamagedCheckpointError(e.checkpoint, e.cause, _intact_siblings(found[0])) from e
    damaged: list[DamagedCheckpointError] = []
    for ckpt in found:
        try:
            progress = _restore_one(ckpt, template, experiment, config)
        except DamagedCheckpointError as e:
            damaged.append(e)
            continue
        if damaged:
            print(f"warning: damaged checkpoint(s) skipped: "
                  f"{'; '.join(f'{e.checkpoint} ({e.cause[:120]})' for e in damaged)}; "
                  f"resuming from the newest intact one, {ckpt}", flush=True)
        progress.damaged = [e.checkpoint for e in damaged]
        return progress
    raise DamagedCheckpointError(
        damaged[0].checkpoint, f"{damaged[0].cause}; all {len(damaged)} checkpoint(s) under "
        f"{os.path.abspath(path)} are damaged: {', '.join(e.checkpoint for e in damaged)}",
        intact=[])


def _restore_one(ckpt: str, template: PyTree, experiment: str | None,
                 config: Mapping | None) -> Progress:
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
                    meta.get("episodes") or {}, meta, checkpoint=ckpt)


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
