"""Glue from an experiment's ConfigDict to an Anakin run (anakin/, docs/anakin.md).

The Anakin counterpart of `sebulba.experiment.run`, kept thin: it reuses that module's config
validation, network builder, run-dir naming and checkpoint restore, and differs only where the
runtime does. The devices are `learner_device_ids` (each acts, steps its envs and learns);
`num_envs` is the environments per process, split over them; the Sebulba-only fields
(`actor_device_ids`, `num_actor_threads`, `queue_size`, `actor_overlap`, ...) are ignored, and
`synchronous` is True by nature (the policy acting is the one being updated: lag 0).
"""
from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable, Sequence

import ml_collections

from anakin import envs as anakin_envs
from anakin import loop, runtime
from sebulba import checkpoint, distributed, experiment, schedules_compat  # noqa: F401
