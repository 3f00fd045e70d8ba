"""What a training run returns, and how Ctrl-C ends one: the same for both runtimes
(sebulba/runner.py, anakin/loop.py), so the wiring reports either alike (summary.json, the
resume hint, exit 130)."""
from __future__ import annotations

import dataclasses

from podracer.agent import PyTree


@dataclasses.dataclass
class TrainResult:
    learner_state: PyTree
    env_steps: int
    updates: int
    episode_summary: dict[str, float]
    last_metrics: dict[str, float]
    stopped_by: str | None = None    # signal name when SIGTERM/SIGINT ended the run early
    checkpoint: str | None = None    # path of the final checkpoint, if one was written
    # A second signal abandoned an update: its computation still runs, and a normal interpreter
    # exit waits for it (the whole update); callers that end the process use os._exit.
    abandoned: bool = False
    # Several members trained in one program (anakin/population.py): each one's
    # {"episode_summary": ..., "last_metrics": ...}; the fields above then hold member 0's.
    members: list[dict] | None = None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C ended training: raised by `train` after the final checkpoint, with the result
    (counters, episode summary, checkpoint path) for the caller to report."""

    def __init__(self, result: TrainResult) -> None:
        self.result = result
        where = f"checkpoint: {result.checkpoint}" if result.checkpoint else "no checkpoint"
        super().__init__(f"stopped by {result.stopped_by} at update {result.updates:,d} "
                         f"(env step {result.env_steps:,d}); {where}")
