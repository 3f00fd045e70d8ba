"""The check both runtimes run on legal-action masks: an action taken where the observation's
mask allowed none is counted in the update's metrics and stops the run (podracer/ledger.py).

An actor whose network masks its policy (networks/actor_critic.py, `action_mask_key`) marks
each step whose mask allows no action in its extras under `NO_LEGAL`; the masked
distribution is then uniform over every action, illegal ones included, so the env got an
action it forbids. The reset step after an episode's end is not counted: its action is
ignored, and a finished game's final observation may rightly allow nothing (2048 when no move
is left)."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from podracer import collectives

NO_LEGAL = "no_legal_action"  # the actor's extras key: [T, B] bool, the mask allowed nothing
METRIC = "actions/no_legal"   # the update's count of such steps that the env acted on


class NoLegalActionError(RuntimeError):
    """An action was taken on an observation whose action mask allows none."""


def count_no_legal(rollout: Any, metrics: dict, axis_name: str) -> dict:
    """`metrics` with METRIC, the steps of `rollout` (all learner devices) whose action the
    env took on a mask that allows nothing; unchanged for an actor that masks nothing."""
    extras = rollout.extras
    if not isinstance(extras, dict) or NO_LEGAL not in extras:
        return metrics
    count = jnp.sum(extras[NO_LEGAL] & rollout.valid).astype(jnp.float32)
    return {**metrics, METRIC: collectives.psum(count, axis_name)}
