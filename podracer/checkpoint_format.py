"""What a checkpoint is: its layout on disk, its metadata, the description of its tree, and how
orbax is imported and set up; shared by saving (checkpoint_save) and reading (checkpoint_read).

A checkpoint is the agent's whole learner state, saved generically (whatever pytree the agent's
`init` returns: params, optimiser state, normaliser statistics, RNG keys, ...), plus JSON
metadata: experiment name, env-step and update counters, the episode-statistics window, the seed
and the full config. Layout, under `<run_dir>/checkpoints/<update>/`:
    state/   the learner state in flax's state-dict form (nested dicts keyed by field name)
    meta/    the JSON metadata (see `Checkpointer.save`); also the tree's paths, shapes, dtypes
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Mapping

import jax
import numpy as np
from flax import serialization

PyTree = Any
FORMAT_VERSION = 1
ITEMS = ("state", "meta")  # the subdirs of one checkpoint
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


def import_orbax():
    import orbax.checkpoint as ocp  # slow import (seconds): only when checkpoints are used
    absl_logger = logging.getLogger("absl")
    if not any(isinstance(f, _OrbaxInfoFilter) for f in absl_logger.filters):
        absl_logger.addFilter(_OrbaxInfoFilter())
    return ocp


def single_process(ocp):
    """Orbax options for reading/writing from this process alone: only process 0 saves (the
    state is replicated) and each process reads on its own, so no cross-host barriers."""
    me = jax.process_index()
    return ocp.options.MultiprocessingOptions(primary_host=me, active_processes={me})


def is_key(x: Any) -> bool:
    return jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key)


def flatten(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    """{"a/b/c": leaf} for a nested-dict state dict; empty dicts (e.g. optax.EmptyState) vanish."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, path + "/"))
        else:
            out[path] = v
    return out


def describe(learner_state: PyTree) -> dict[str, list]:
    """{path: [shape, dtype]} of a learner state (arrays or ShapeDtypeStructs) as saved."""
    flat = flatten(serialization.to_state_dict(learner_state))
    out = {}
    for path, x in flat.items():
        if is_key(x):  # saved as raw key data (uint32)
            x = jax.eval_shape(jax.random.key_data, x)
        out[path] = [list(np.shape(x)), str(np.dtype(x.dtype))]
    return out
