"""The Sebulba runtime's config section: `RuntimeConfig` (how the runtime lays out and paces the
work; the top level of an experiment config) with its rules, and what it tells the rest of a
run: the batch an agent is built for (`batch_shape`) and the update counts (`plan`).

The batch is a fact of the config: `num_envs` environments per process step every update,
whatever the machine. The layout (sebulba/layout.py) only decides how they are carried:
`num_actor_threads` threads per actor device (0 = auto from the CPU cores), each stepping an
equal share. So a config trains the same algorithm (samples per update, minibatches,
optimiser constants) on 2 cores or 64; only the speed differs.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from podracer.batch import BatchShape, UpdatePlan
from podracer.compile_cache import DEFAULT_DIR
from podracer.schema import check_types

OVERLAP_MODES = ("auto", "on", "off")


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """How the Sebulba runtime lays out and paces the work (algorithm-independent). The
    top-level fields of an experiment config (experiments/configs/common.py generates them
    from here). Checked on construction: a RuntimeConfig that exists is a valid one."""

    seed: int = 0                      # base seed: params init, actor RNG, env seeds
    actor_device_ids: Sequence[int] = (0,)    # local device indices that run actor threads
    learner_device_ids: Sequence[int] = (0,)  # local device indices sharing the learner update
    num_actor_threads: int = 0         # actor threads per actor device, each stepping an equal
                                       # share of num_envs; 0 = auto from the CPU cores
                                       # (sebulba/layout.py; the layout is printed)
    num_envs: int = 32                 # environments per process, all stepped every update:
                                       # the batch (split over actor devices x threads)
    unroll_length: int = 20            # T: steps per rollout
    total_env_steps: int = 10_000_000  # agent steps over all actors (x4 frames on Atari)
    queue_size: int = 1                # rollouts buffered per actor thread (backpressure)
    synchronous: bool = False          # True: actors wait for params of the latest update
    stall_warning_s: float = 120.0     # warn if the learner waits this long for data (or an
                                       # actor for params); docs/robustness.md
    join_timeout_s: float = 10.0       # seconds to wait for threads on shutdown
    stop_at_return: float | None = None  # stop early once the 100-game mean return reaches
                                       # this (None = off)
    max_nonfinite_updates: int = 10    # stop after N skipped non-finite updates in a row
    restart_envs_on_error: bool = False  # rebuild an actor's failing EnvPool instead of stopping
    max_env_restarts: int = 3          # env pool rebuilds per actor thread before giving up
    # Actor threads step two half-pools in turn, one's env step overlapping the other's policy
    # (sebulba/actor.py): "on", "off", or "auto" = on for envs that step in their own threads
    # (EnvPool ids) with >= 2 envs per thread when the actor device is an accelerator; off on
    # CPU actor devices and for envs with only a synchronous `step` (sebulba.actor.wants_overlap).
    actor_overlap: str = "auto"
    # JAX's persistent compilation cache (podracer/compile_cache.py): a relaunch loads compiled
    # programs; "" = off.
    compilation_cache_dir: str = DEFAULT_DIR

    def __post_init__(self) -> None:
        check_types(RuntimeConfig, dataclasses.asdict(self))
        for name in ("actor_device_ids", "learner_device_ids"):
            ids = tuple(getattr(self, name))
            if not ids or len(set(ids)) != len(ids):
                raise ValueError(f"{name}={list(ids)} must list at least one local device id, "
                                 f"each once.")
            object.__setattr__(self, name, ids)  # lists (JSON, ml_collections) become tuples
        for name in ("num_envs", "unroll_length", "total_env_steps", "queue_size",
                     "max_nonfinite_updates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a positive integer.")
        for name in ("num_actor_threads", "max_env_restarts"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a non-negative "
                                 f"integer{' (0 = auto)' if name == 'num_actor_threads' else ''}.")
        if self.actor_overlap not in OVERLAP_MODES:
            raise ValueError(f"actor_overlap={self.actor_overlap!r} must be 'auto', 'on' or "
                             f"'off'.")
        if not 0 <= self.seed < 2**30:
            raise ValueError(f"seed={self.seed!r} must be in [0, 2**30) (EnvPool seeds are "
                             f"int32 and actors add offsets).")
        if not self.stall_warning_s > 0:
            raise ValueError(f"stall_warning_s={self.stall_warning_s!r} must be > 0.")
        if not (self.join_timeout_s >= 0 and math.isfinite(self.join_timeout_s)):
            raise ValueError(f"join_timeout_s={self.join_timeout_s!r} must be a non-negative "
                             f"number.")
        if self.stop_at_return is not None and not math.isfinite(self.stop_at_return):
            raise ValueError(f"stop_at_return={self.stop_at_return!r} must be a finite number "
                             f"or None (off).")
        carriers = len(self.actor_device_ids) * len(self.learner_device_ids)
        if self.num_envs % carriers:
            raise ValueError(
                f"num_envs={self.num_envs} (per process) must be divisible by actor devices x "
                f"learner devices ({len(self.actor_device_ids)} x "
                f"{len(self.learner_device_ids)}): each actor device steps an equal share, and "
                f"each rollout is split along the environment axis across the learners.")
        if self.num_actor_threads > 0:
            self.envs_per_thread  # noqa: B018 - raises naming the split that does not divide
            if self.actor_overlap == "on" and self.envs_per_thread < 2:
                raise ValueError(f"actor_overlap='on' needs >= 2 envs per actor thread (two "
                                 f"half-pools); num_envs={self.num_envs} over "
                                 f"{self.num_actor_threads} thread(s) x "
                                 f"{len(self.actor_device_ids)} actor device(s) gives "
                                 f"{self.envs_per_thread}.")

    @property
    def envs_per_thread(self) -> int:
        """Environments each actor thread steps (the layout must be resolved)."""
        threads = len(self.actor_device_ids) * self.num_actor_threads
        if threads < 1:
            raise ValueError("num_actor_threads=0 (auto) is not resolved yet: "
                             "sebulba.layout.resolve(config) first.")
        per_thread, rest = divmod(self.num_envs, threads)
        if rest or per_thread % len(self.learner_device_ids):
            raise ValueError(
                f"num_actor_threads={self.num_actor_threads}: num_envs={self.num_envs} (per "
                f"process) does not split into {threads} actor thread(s) "
                f"({len(self.actor_device_ids)} actor device(s) x {self.num_actor_threads}) of "
                f"whole env columns for {len(self.learner_device_ids)} learner device(s); "
                f"choose num_actor_threads so that num_envs / (actor devices x threads) is a "
                f"multiple of the learner devices, or 0 (auto) to let the layout choose.")
        return per_thread

    def batch_shape(self, processes: int) -> BatchShape:
        """The batch an agent is built for, in a job of `processes` processes (the runtime
        says how many: before joining, the configured count; after, jax's)."""
        return BatchShape(envs_per_learner=self.num_envs // len(self.learner_device_ids),
                          unroll_length=self.unroll_length,
                          learner_devices=len(self.learner_device_ids), processes=processes,
                          on_policy=self.synchronous)

    def plan(self, processes: int) -> UpdatePlan:
        """The run's update counts in a job of `processes` processes."""
        return self.batch_shape(processes).plan(self.total_env_steps)
