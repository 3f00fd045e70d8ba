"""The length of an Anakin host loop's next fused call (anakin/loop.py): `CallPace` (as many
updates as fit in the call's target time) and `call_length` (fewer when the run ends, or a
checkpoint or evaluation is due, sooner)."""
from __future__ import annotations

from typing import Callable


class CallPace:
    """How many updates (1..K) the next fused call runs: as many as fit in `target_s`, judged
    from the last call's time per update. The first call runs one (it compiles, and its row
    comes at once); a call that compiled or met a loaded machine is followed by short ones
    until the time per update is back. The updates are the same whatever the lengths (each
    round of a call is one update: update_program.fused_rounds); only the host's per-call
    work and the wait of a signal or a metrics row change. `target_s` = 0: always K."""

    def __init__(self, fused: int, target_s: float) -> None:
        self.fused, self.target_s = fused, target_s
        self._per_update_s: float | None = None

    def observe(self, k: int, seconds: float) -> None:
        self._per_update_s = seconds / k

    def next_length(self) -> int:
        if self.fused == 1 or self.target_s <= 0:
            return self.fused
        if self._per_update_s is None:
            return 1
        return max(1, min(self.fused, int(self.target_s / max(self._per_update_s, 1e-9))))


def call_length(fused: int, updates: int, end: int, due: Callable[[int], bool]) -> int:
    """Updates in the next call: up to the fused K, fewer when the run ends sooner or a hook
    (checkpoint, evaluation) is due sooner: the call then ends at that update, so the hook
    sees its own state. The fused program runs any length up to K
    (update_program.fused_rounds)."""
    for j in range(1, min(fused, end - updates)):
        if due(updates + j):
            return j
    return max(1, min(fused, end - updates))
