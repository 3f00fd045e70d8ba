"""Saving checkpoints during a run: `Checkpointer` (the schedule, by update count and/or wall
time, keeping the newest few) and what one save writes.

The state is copied to the host before saving, because the runtime donates the device buffers to
the next update; orbax then writes it in the background while training goes on, to a temporary
name that it renames when the checkpoint is complete (so a cut-short save is never listed).
"""
from __future__ import annotations

import os
import time
from typing import Any, Mapping

import jax
import numpy as np
from flax import serialization

from podracer.checkpoint_format import (FORMAT_VERSION, ITEMS, Progress, describe, flatten,
                                        import_orbax, is_key, single_process)


def _to_host(x: Any) -> Any:
    """This process's copy of a replicated array as numpy (keys as raw uint32 key data)."""
    if isinstance(x, jax.Array):
        x = x.addressable_shards[0].data  # the whole array: the learner state is replicated
        if is_key(x):
            x = jax.random.key_data(x)
    return np.asarray(x)


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
        self._ocp = ocp = import_orbax()
        self.directory = os.path.abspath(directory)
        self.every_updates, self.every_minutes = every_updates, every_minutes
        self.metadata = dict(metadata or {})
        os.makedirs(self.directory, exist_ok=True)  # orbax can't with active_processes set
        self._mgr = ocp.CheckpointManager(
            self.directory, item_names=ITEMS, options=ocp.CheckpointManagerOptions(
                max_to_keep=keep, create=False, multiprocessing_options=single_process(ocp)))
        self._last_time = time.monotonic()
        self.last_saved: int | None = self._mgr.latest_step()

    def due(self, update: int) -> bool:
        """Whether `update` is a checkpoint update by count (a loop that fuses several updates
        into one call ends a call there, so the state saved is that update's)."""
        return self.every_updates > 0 and update % self.every_updates == 0

    def time_due(self) -> bool:
        """Whether `every_minutes` have passed since the last save (the next update saves)."""
        return (self.every_minutes > 0
                and time.monotonic() - self._last_time >= 60 * self.every_minutes)

    def after_update(self, progress: Progress) -> bool:
        """Saves if an interval has passed; returns whether it saved."""
        by_count = self.due(progress.updates)
        by_time = self.time_due()
        if by_count or by_time:
            self.save(progress)
        return by_count or by_time

    def save(self, progress: Progress) -> str:
        """Writes a checkpoint for `progress.updates` (in the background); returns its path."""
        if self.last_saved is not None and progress.updates <= self.last_saved:
            return self.path(progress.updates)  # e.g. a final save right after a periodic one
        # Keys become raw uint32 data (key arrays are not plain arrays); restore re-wraps them.
        host = jax.tree.map(_to_host, progress.learner_state)
        key_impls = {p: str(jax.random.key_impl(x)) for p, x in flatten(
            serialization.to_state_dict(progress.learner_state)).items() if is_key(x)}
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
