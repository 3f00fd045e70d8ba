"""Learning-rate decay over updates, and how a resumed run continues it (docs/checkpoints.md).

A run's linear decay is described by a `Horizon`: the update count at which the rate reaches 0,
plus, for a run resumed with another horizon, the update and rate fraction where the decay was
re-stretched. `Horizon` is an `int` (the count), so agent builders that only need the number of
updates (the `num_updates` argument of every `make_agent`) keep working unchanged.

The rule when resuming (`resumed_horizon`):
- same horizon as the checkpoint was trained with: the very same schedule (bit-identical rates),
  so a run split into pieces by resume matches an uninterrupted one;
- another horizon: the decay re-stretches from the rate of the checkpoint's last update,
  linearly to 0 at the new horizon, so the rate never jumps.
"""
from __future__ import annotations

from typing import Any, Mapping

import optax


class Horizon(int):
    """`num_updates` (the int value): the update count at which the decay reaches 0.

    `begin_update`, `begin_fraction`: the decay is the line through (begin_update,
    begin_fraction * learning_rate) and (num_updates, 0). A fresh run has (0, 1.0): the
    plain `optax.linear_schedule(learning_rate, 0, num_updates)`.
    """

    begin_update: int
    begin_fraction: float

    def __new__(cls, num_updates: int, begin_update: int = 0, begin_fraction: float = 1.0):
        num_updates, begin_update = int(num_updates), int(begin_update)
        if num_updates < 1 or not 0 <= begin_update < num_updates:
            raise ValueError(f"Horizon(num_updates={num_updates}, begin_update={begin_update}):"
                             f" need num_updates >= 1 and 0 <= begin_update < num_updates.")
        if not 0.0 <= begin_fraction <= 1.0:
            raise ValueError(f"Horizon begin_fraction={begin_fraction} must be in [0, 1].")
        self = super().__new__(cls, num_updates)
        self.begin_update, self.begin_fraction = begin_update, float(begin_fraction)
        return self

    @property
    def plain(self) -> bool:
        return self.begin_update == 0 and self.begin_fraction == 1.0

    def fraction_at(self, update: int) -> float:
        """Rate / learning_rate at update counter `update` (the host-side twin of the schedule)."""
        if update <= self.begin_update:
            return self.begin_fraction
        left = 1.0 - (update - self.begin_update) / (int(self) - self.begin_update)
        return self.begin_fraction * max(0.0, left)

    def to_dict(self) -> dict[str, Any]:
        return {"num_updates": int(self), "begin_update": self.begin_update,
                "begin_fraction": self.begin_fraction}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Horizon":
        return cls(d["num_updates"], d.get("begin_update", 0), d.get("begin_fraction", 1.0))

    def __repr__(self) -> str:
        return (f"Horizon({int(self)}, begin_update={self.begin_update}, "
                f"begin_fraction={self.begin_fraction!r})")

    def __reduce__(self):  # int subclasses with attributes need this to pickle / deepcopy
        return (Horizon, (int(self), self.begin_update, self.begin_fraction))


def as_horizon(num_updates: int) -> Horizon:
    return num_updates if isinstance(num_updates, Horizon) else Horizon(num_updates)


def linear_decay(learning_rate: float, num_updates: int) -> optax.Schedule:
    """Linear decay to 0 over `num_updates` (an int or a `Horizon`), as a function of the
    update counter. A plain horizon is exactly `optax.linear_schedule(lr, 0, num_updates)`."""
    h = as_horizon(num_updates)
    if h.plain:
        return optax.linear_schedule(learning_rate, 0.0, int(h))
    return optax.linear_schedule(learning_rate * h.begin_fraction, 0.0,
                                 int(h) - h.begin_update, transition_begin=h.begin_update)


def resumed_horizon(trained: Horizon, resume_update: int, num_updates: int) -> Horizon:
    """The horizon of a run resumed at update counter `resume_update` that will end after
    `num_updates` updates, from the horizon `trained` the checkpoint was trained with.

    Same count: `trained` itself (identical schedule). Another count: re-stretched from the
    rate of the checkpoint's last update (counter resume_update - 1) to 0 at `num_updates`.
    """
    if num_updates == int(trained):
        return trained
    if resume_update < 1 or num_updates <= resume_update:  # nothing trained, or nothing left
        return Horizon(num_updates)
    last = resume_update - 1
    return Horizon(num_updates, last, trained.fraction_at(last))


def trained_horizon(metadata: Mapping[str, Any]) -> Horizon:
    """The horizon a checkpoint was trained with: saved as `lr_horizon` in its metadata, or,
    for checkpoints written before that, the plain decay over the saved config's
    total_env_steps at the checkpoint's steps per update."""
    if metadata.get("lr_horizon"):
        return Horizon.from_dict(metadata["lr_horizon"])
    updates, steps = int(metadata.get("updates", 0)), int(metadata.get("env_steps", 0))
    total = int(metadata.get("config", {}).get("total_env_steps", 0))
    per_update = steps // updates if updates > 0 and steps > 0 else 0
    return Horizon(max(1, total // per_update) if per_update and total else max(1, updates))
