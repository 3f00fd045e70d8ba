"""What one update of a run is made of, as the agents and the bookkeeping see it, whichever
runtime makes it.

`BatchShape` is the runtime-neutral description an agent's builder and checks get
(agents/builders.py): env columns per learner device, T, learner devices, processes, and
whether the data is on-policy. Each runtime produces it from its own config and the process
count it knows (`sebulba.runtime_config.RuntimeConfig.batch_shape`,
`anakin.runtime_config.AnakinConfig.batch_shape`), so an agent never reads a runtime's fields.
`UpdatePlan` is the update-count rule both runtimes share: how many updates a fresh or resumed
run makes of `total_env_steps`.
"""
from __future__ import annotations

import dataclasses

# Update counters and learning-rate schedules count in int32 on the device.
MAX_UPDATES = 2**31 - 1


def _positive_int(owner: str, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{owner}.{name}={value!r} must be a positive integer.")


@dataclasses.dataclass(frozen=True)
class BatchShape:
    """One update's data, as an agent needs to know it. The learning-rate horizon (the planned
    updates) is the builder's own argument, since a resumed run re-stretches it
    (agents/schedules.py)."""

    envs_per_learner: int   # env columns each learner device holds per update
    unroll_length: int      # T: steps per env column per update
    learner_devices: int    # learner devices of one process (every process has as many)
    processes: int          # processes of the job (1 unless multi-host)
    on_policy: bool         # rollouts come from the parameters being updated (no policy lag)

    def __post_init__(self) -> None:
        for name in ("envs_per_learner", "unroll_length", "learner_devices", "processes"):
            _positive_int("BatchShape", name, getattr(self, name))

    @property
    def batch_envs(self) -> int:
        """Env columns per update over every learner device of every process."""
        return self.envs_per_learner * self.learner_devices * self.processes

    @property
    def samples(self) -> int:
        """Samples (agent steps) per update over the whole job."""
        return self.batch_envs * self.unroll_length

    def plan(self, total_env_steps: int) -> "UpdatePlan":
        return UpdatePlan(self.samples, total_env_steps)


@dataclasses.dataclass(frozen=True)
class UpdatePlan:
    """The update counts of a run, the same rule on both runtimes."""

    steps_per_update: int   # agent steps of one update over the whole job
    total_env_steps: int    # the run's budget of agent steps

    def __post_init__(self) -> None:
        _positive_int("UpdatePlan", "steps_per_update", self.steps_per_update)
        _positive_int("UpdatePlan", "total_env_steps", self.total_env_steps)
        if self.total_env_steps // self.steps_per_update > MAX_UPDATES:
            raise ValueError(
                f"total_env_steps={self.total_env_steps!r} is too large: at "
                f"{self.steps_per_update} steps per update it needs >= 2**31 updates (int32 "
                f"counters); use fewer steps or bigger batches.")

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
