"""The runtime's config: `RuntimeConfig` (how the runtime lays out and paces the work, the top
level of an experiment config), its checks (`validate_runtime_config`, static: no device query,
so a multi-host run can check before joining) and the update-count rule both runtimes share
(`UpdatePlan`)."""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import jax

from sebulba.topology import check_env_split
from sebulba.validation import ConfigError, check_types, non_negative, positive_int, require


class UpdatePlan:
    """The update counts of a run, the same rule on both runtimes (RuntimeConfig here,
    anakin.runtime.AnakinConfig), from the class's `batch_envs`, `unroll_length` and
    `total_env_steps`."""

    @property
    def steps_per_update(self) -> int:
        return self.batch_envs * self.unroll_length

    @property
    def num_updates(self) -> int:
        """Updates a fresh run makes: whole updates within total_env_steps (at least one)."""
        return max(1, self.total_env_steps // self.steps_per_update)

    def planned_updates(self, done_updates: int = 0, done_env_steps: int = 0) -> int:
        """The update counter a run ends at. Fresh: `num_updates`. Resumed: the updates done
        plus the whole updates that fit in the steps left (the layout, hence the steps per
        update, may have changed)."""
        if done_updates == 0 and done_env_steps == 0:
            return self.num_updates
        left = max(0, self.total_env_steps - done_env_steps)
        return done_updates + left // self.steps_per_update

    def planned_env_steps(self, done_updates: int = 0, done_env_steps: int = 0) -> int:
        """The env-step counter after the last planned update (the console's target)."""
        return done_env_steps + (self.planned_updates(done_updates, done_env_steps)
                                 - done_updates) * self.steps_per_update


@dataclasses.dataclass(frozen=True)
class RuntimeConfig(UpdatePlan):
    """How the runtime lays out and paces the work (algorithm-independent). The top-level
    fields of an experiment config (experiments/configs/common.py generates them from here)."""

    seed: int = 0                      # base seed: params init, actor RNG, env seeds
    actor_device_ids: Sequence[int] = (0,)    # local device indices that run actor threads
    learner_device_ids: Sequence[int] = (0,)  # local device indices sharing the learner update
    num_actor_threads: int = 0         # actor threads per actor device; 0 = auto from the CPU
                                       # cores (sebulba/layout.py; the layout is printed)
    num_envs: int = 32                 # environments per actor thread
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
    # JAX's persistent compilation cache (sebulba/compile_cache.py): a relaunch loads compiled
    # programs; "" = off.
    compilation_cache_dir: str = "~/.cache/sebulba-rl/jax"

    @property
    def batch_envs(self) -> int:
        """Environments per update over all hosts (every host runs the same layout)."""
        return (len(self.actor_device_ids) * self.num_actor_threads * self.num_envs
                * jax.process_count())


def validate_runtime_config(rc: RuntimeConfig, num_processes: int | None = None) -> None:
    """Raises ConfigError (a ValueError) naming the field, the bad value and what is allowed.

    `num_processes` defaults to jax.process_count(); pass it to validate before joining a
    multi-host job (the first device query would come too early).
    """
    check_types(RuntimeConfig, dataclasses.asdict(rc))
    for name in ("num_envs", "unroll_length", "total_env_steps", "queue_size",
                 "max_nonfinite_updates"):
        positive_int(name, getattr(rc, name))
    # 0 = auto: sebulba.layout chooses from the cores (train resolves it; experiments earlier).
    non_negative("num_actor_threads", rc.num_actor_threads, integer=True)
    require(isinstance(rc.compilation_cache_dir, str), "compilation_cache_dir",
            rc.compilation_cache_dir, "must be a path, or \"\" to turn the cache off.")
    non_negative("max_env_restarts", rc.max_env_restarts, integer=True)
    require(rc.actor_overlap in ("auto", "on", "off"), "actor_overlap", rc.actor_overlap,
            "must be 'auto', 'on' or 'off'.")
    require(rc.actor_overlap != "on" or rc.num_envs >= 2, "actor_overlap", rc.actor_overlap,
            f"needs num_envs >= 2 per actor thread (two half-pools); num_envs={rc.num_envs}.")
    require(0 <= rc.seed < 2**30, "seed", rc.seed, "must be in [0, 2**30) (EnvPool seeds are "
            "int32 and actors add offsets).")
    require(rc.stall_warning_s > 0, "stall_warning_s", rc.stall_warning_s, "must be > 0.")
    non_negative("join_timeout_s", rc.join_timeout_s)
    require(rc.stop_at_return is None or math.isfinite(rc.stop_at_return), "stop_at_return",
            rc.stop_at_return, "must be a finite number or None (off).")
    for name in ("actor_device_ids", "learner_device_ids"):
        ids = getattr(rc, name)
        require(len(ids) > 0 and len(set(ids)) == len(ids), name, list(ids),
                "must list at least one local device id, each once.")
    try:
        check_env_split(rc.num_envs, rc.learner_device_ids)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    processes = jax.process_count() if num_processes is None else num_processes
    per_update = (len(rc.actor_device_ids) * rc.num_actor_threads * rc.num_envs * processes
                  * rc.unroll_length)
    # Update counters and learning-rate schedules count in int32 on the device.
    require(rc.total_env_steps // max(per_update, 1) < 2**31, "total_env_steps",
            rc.total_env_steps, f"is too large: at {per_update} steps per update it needs "
            f">= 2**31 updates (int32 counters); use fewer steps or bigger batches.")
