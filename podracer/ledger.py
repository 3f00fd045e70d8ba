"""What a training loop does after every update, the same on both runtimes (sebulba/runner.py,
anakin/loop.py): count skipped non-finite updates (and stop after too many in a row), write
the update's metrics, and run the checkpoint and evaluation cadence.

Anakin can fuse several updates into one compiled call (`updates_per_call`); it records each
of them here as if it had run alone, and ends its calls at the updates where a hook is `due`
(a checkpoint or an evaluation by update count), so those see that update's own state.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from podracer.checkpoint_format import Progress
from podracer.finite import NonFiniteError
from podracer.legal import METRIC as NO_LEGAL, NoLegalActionError
from podracer.logging import EpisodeStats, MetricsLogger

PyTree = Any


@runtime_checkable
class UpdateHook(Protocol):
    """An `on_update` hook that says in advance at which updates it acts (the periodic
    evaluator): a loop that fuses updates ends a call there. A plain callable
    `on_update(update, env_steps, state)` runs after every update whose state the loop holds.
    Either may also have `final(update, env_steps, state)`, run after it at the session's last
    update (its planned end, or the update that reached `stop_at_return`)."""

    def __call__(self, update: int, env_steps: int, state: PyTree) -> None: ...

    def due(self, update: int) -> bool: ...


class Ledger:
    """The after-update bookkeeping of one training session (see the module docstring).

    `end_update`: the update counter the session ends at (its last update forces a console
    line). `stop_at_return`: the 100-game mean that ends training early (also forces a line).
    """

    def __init__(self, logger: MetricsLogger, episodes: EpisodeStats, *, end_update: int,
                 max_nonfinite_updates: int, stop_at_return: float | None = None,
                 checkpointer=None, on_update: Callable[[int, int, PyTree], None] | None = None,
                 name: str = "") -> None:
        self.logger, self.episodes, self.end_update = logger, episodes, end_update
        self.name = name  # who the warnings are about (a population's member), or ""
        self.max_nonfinite, self.stop_at_return = max_nonfinite_updates, stop_at_return
        self.checkpointer, self.on_update = checkpointer, on_update
        self.nonfinite_streak = self.nonfinite_total = 0
        self.last_metrics: dict[str, float] = {}

    @property
    def target_reached(self) -> bool:
        return (self.stop_at_return is not None
                and self.episodes.best_mean >= self.stop_at_return)

    def due(self, update: int) -> bool:
        """Whether a hook acts at `update` by count (a fused call must end there)."""
        if self.checkpointer is not None and self.checkpointer.due(update):
            return True
        return isinstance(self.on_update, UpdateHook) and self.on_update.due(update)

    def record(self, update: int, env_steps: int, scalars: dict[str, float],
               state: PyTree = None) -> None:
        """After update `update` (counter after it) at `env_steps`: `scalars` are its metrics
        and the runtime's (sps, timings, episode/*); `state` the learner state after it, or
        None for an update inside a fused call (never a due update: see the module doc).

        Raises NonFiniteError after `max_nonfinite_updates` skipped updates in a row, once the
        update is logged; the loop then saves the last good state."""
        skipped = scalars.get("nonfinite/skipped", 0.0) > 0
        self.nonfinite_streak = self.nonfinite_streak + 1 if skipped else 0
        self.nonfinite_total += int(skipped)
        scalars["nonfinite/total"] = float(self.nonfinite_total)
        self.last_metrics = scalars
        self.logger.write(env_steps, scalars,
                          force_print=update >= self.end_update or self.target_reached)
        if skipped:
            self._warn_or_stop(update, env_steps, scalars)
        if scalars.get(NO_LEGAL, 0.0) > 0:
            who = f"{self.name}: " if self.name else ""
            raise NoLegalActionError(
                f"{who}{int(scalars[NO_LEGAL])} step(s) of update {update} (env steps up to "
                f"{env_steps:,d}) acted on an observation whose action mask allows no action: "
                f"the env was given an action it forbids. Check the mask (1 = legal); if the "
                f"env rightly allows nothing in some states (jumanji's Snake when trapped), "
                f"set --config.env.action_mask_empty=allow: such a step then samples from the "
                f"unmasked policy.")
        if state is None:
            return
        if self.checkpointer is not None:
            self.checkpointer.after_update(
                Progress(state, env_steps, update, self.episodes.state_dict()))
        if self.on_update is not None:
            self.on_update(update, env_steps, state)
            final = getattr(self.on_update, "final", None)  # see UpdateHook
            if final is not None and (update >= self.end_update or self.target_reached):
                final(update, env_steps, state)

    def _warn_or_stop(self, update: int, env_steps: int, scalars: dict[str, float]) -> None:
        bad = sorted(k for k, v in scalars.items() if not np.isfinite(v)) or ["learner state"]
        limit = self.max_nonfinite
        who = f"{self.name}: " if self.name else ""
        print(f"WARNING: {who}update {update} at env step {env_steps:,d} was non-finite "
              f"({', '.join(bad)}); skipped, learner state kept ({self.nonfinite_streak}/"
              f"{limit} in a row, {self.nonfinite_total} in all).", flush=True)
        if self.nonfinite_streak >= limit:
            raise NonFiniteError(
                f"{self.nonfinite_streak} non-finite updates in a row (max_nonfinite_updates="
                f"{limit}; last: {', '.join(bad)}); stopped at env step {env_steps:,d}.")
