"""The members of an Anakin population stopped by non-finite updates: each is frozen at its last
good state from the next call on (its envs step on in the shared program, its rows stop) while
the others go on, and is recorded where and why (in the population's checkpoints, so a resume
keeps it frozen, and in the run's result). One agent alone stops the run instead
(podracer.ledger)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from podracer.finite import NonFiniteError
from podracer.logging import MetricsLogger


class Diverged:
    """{member: {"update", "env_steps", "error"}} of a population's `loggers` (one per
    member), starting from `saved` (a checkpoint's `state_dict()`)."""

    def __init__(self, loggers: Sequence[MetricsLogger], saved: Mapping | None = None) -> None:
        self.loggers = loggers
        self.members: dict[int, dict] = {int(m): d for m, d in (saved or {}).items()}
        for m in self.members:
            self._pass_console(m)

    def __contains__(self, m: int) -> bool:
        return m in self.members

    def __len__(self) -> int:
        return len(self.members)

    def get(self, m: int) -> dict | None:
        return self.members.get(m)

    def active(self) -> np.ndarray:
        """[M] whether each member still trains (the compiled call's `active` input)."""
        return np.asarray([m not in self.members for m in range(len(self.loggers))])

    def add(self, m: int, update: int, env_steps: int, error: Exception) -> bool:
        """Freezes member `m` after `error` at `update`; False if it was frozen already."""
        if m in self.members:
            return False
        self.members[m] = {"update": update, "env_steps": env_steps, "error": str(error)}
        size = len(self.loggers)
        print(f"member {m} diverged: {error} It is frozen at its last good state; "
              f"{size - len(self.members)} of {size} members go on.", flush=True)
        self._pass_console(m)
        return True

    def state_dict(self) -> dict:
        return {str(m): d for m, d in sorted(self.members.items())}

    def every_member_error(self) -> NonFiniteError | None:
        """The run's error once no member trains any more, else None."""
        size = len(self.loggers)
        if len(self.members) < size:
            return None
        return NonFiniteError(f"every member diverged ({size} of {size}): "
                              + "; ".join(f"member {m} at update {d['update']:,d}"
                                          for m, d in sorted(self.members.items())) + ".")

    def _pass_console(self, m: int) -> None:
        """The progress lines of a population come from one member's logger (member 0's):
        when that member diverges, the first member still training prints them from then on."""
        live = [i for i in range(len(self.loggers)) if i not in self.members]
        quiet = float("inf")
        if live and self.loggers[m].console_every_s < quiet:
            self.loggers[live[0]].console_every_s = self.loggers[m].console_every_s
            self.loggers[m].console_every_s = quiet
