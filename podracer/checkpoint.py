"""Checkpoints of a training run (orbax-checkpoint on local disk): save, find, check, restore.

The public facade: callers use `checkpoint.X` (the runtimes, the wiring, scripts, tests), and
this module gathers the names from the modules that do the work, one job each:
    checkpoint_format   what a checkpoint is: layout, metadata, tree description, `Progress`
    checkpoint_save     `Checkpointer`: the save schedule and what one save writes
    checkpoint_read     finding checkpoints, reading their files, damaged vs intact
    checkpoint_restore  `restore` (`read`, then `fit`) into a fresh learner state; params and
                        config for evaluation
"""
from __future__ import annotations

from podracer.checkpoint_format import (DAMAGED_PREFIX, FORMAT_VERSION, DamagedCheckpointError,
                                        Progress, PyTree, describe)
from podracer.checkpoint_read import (candidates, check_metadata, damage, is_checkpoint_dir,
                                      list_steps, load_metadata, load_raw, move_aside, resolve,
                                      run_dir_of)
from podracer.checkpoint_restore import (Loaded, check_compatible, config_diff,
                                         config_from_metadata, fit, load_params, read, restore)
from podracer.checkpoint_save import Checkpointer

__all__ = [
    "DAMAGED_PREFIX", "FORMAT_VERSION", "Checkpointer", "DamagedCheckpointError", "Loaded",
    "Progress", "PyTree", "candidates", "check_compatible", "check_metadata", "config_diff",
    "config_from_metadata", "damage", "describe", "fit", "is_checkpoint_dir", "list_steps",
    "load_metadata", "load_params", "load_raw", "move_aside", "read", "resolve", "restore",
    "run_dir_of",
]
