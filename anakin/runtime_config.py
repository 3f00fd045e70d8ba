"""The Anakin runtime's config section: `AnakinConfig` (how the runtime lays out and paces the
work; the top level of an experiment config, as sebulba/runtime_config.py is Sebulba's) with its
rules, and what it tells the rest of a run: the batch an agent is built for (`batch_shape`) and
the update counts (`plan`). `num_envs` is per process, split evenly over its devices.
"""
from __future__ import annotations

import dataclasses
import math

from podracer.batch import BatchShape, UpdatePlan
from podracer.compile_cache import DEFAULT_DIR
from podracer.schema import check_types


@dataclasses.dataclass(frozen=True)
class AnakinConfig:
    """How the Anakin runtime lays out and paces the work (algorithm-independent): its section
    of an experiment config, the top-level fields it reads (the Sebulba-only ones, such as
    `actor_device_ids` or `queue_size`, do not apply). Checked on construction."""

    seed: int = 0                       # base seed: params init, env and action key streams
    learner_device_ids: tuple[int, ...] = (0,)  # local devices; each acts, steps envs, learns
    num_envs: int = 64                  # environments per process, split over the devices
    unroll_length: int = 128            # T, steps per rollout
    total_env_steps: int = 1_000_000    # agent steps over all processes
    stop_at_return: float | None = None  # stop once the 100-game mean return reaches it
    max_nonfinite_updates: int = 10     # stop after this many non-finite updates in a row
    updates_per_call: int = 16          # K: at most this many updates per compiled call (one
                                        # program for every length 1..K); each is still
                                        # logged, counted and checkpointed as its own
    call_target_s: float = 0.25         # with K > 1: each call runs as many updates (1..K) as
                                        # fit in about this many seconds, from the last call's
                                        # time per update (short updates: K, amortising the
                                        # host's per-call work; long ones: 1, so a signal or a
                                        # metrics row waits one update); 0: always K
    compilation_cache_dir: str = DEFAULT_DIR  # JAX's persistent compilation cache; "" = off
    num_seeds: int = 1                  # agents trained side by side in one program, seeds
                                        # seed .. seed + num_seeds - 1 (anakin/population.py)
    vary: str = ""                      # agent fields to cross with the seeds, in the same
                                        # program: "agent.learning_rate=[1e-4,3e-4];..."

    def __post_init__(self) -> None:
        check_types(AnakinConfig, dataclasses.asdict(self))
        ids = tuple(self.learner_device_ids)
        object.__setattr__(self, "learner_device_ids", ids)
        for name in ("num_envs", "unroll_length", "total_env_steps", "max_nonfinite_updates",
                     "updates_per_call", "num_seeds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a positive integer.")
        if not ids or len(set(ids)) != len(ids):
            raise ValueError(f"learner_device_ids={list(ids)} must list at least one local "
                             f"device id, each once.")
        if self.num_envs % len(ids):
            raise ValueError(f"num_envs={self.num_envs} (per process) must be divisible by the "
                             f"number of devices ({len(ids)}, learner_device_ids={list(ids)}): "
                             f"the envs are split evenly over the devices.")
        if not (math.isfinite(self.call_target_s) and self.call_target_s >= 0):
            raise ValueError(f"call_target_s={self.call_target_s!r} must be a finite number of "
                             f"seconds >= 0 (0: every call runs updates_per_call updates).")
        if not 0 <= self.seed < 2**31:
            raise ValueError(f"seed={self.seed} must be in [0, 2**31).")
        if self.stop_at_return is not None and not math.isfinite(self.stop_at_return):
            raise ValueError(f"stop_at_return={self.stop_at_return} must be finite or None.")

    @property
    def device_ids(self) -> tuple[int, ...]:
        return self.learner_device_ids

    def batch_shape(self, processes: int) -> BatchShape:
        """The batch an agent is built for: on-policy by nature (the policy that acts is the
        one being updated)."""
        return BatchShape(envs_per_learner=self.num_envs // len(self.learner_device_ids),
                          unroll_length=self.unroll_length,
                          learner_devices=len(self.learner_device_ids), processes=processes,
                          on_policy=True)

    def plan(self, processes: int) -> UpdatePlan:
        return self.batch_shape(processes).plan(self.total_env_steps)
