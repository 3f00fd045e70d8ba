"""The Anakin runtime's random streams, one place for what each seed feeds: the agent's
parameters start from `init_key(seed)`; every env of a process (its resets, its action samples
and its steps) draws from a stream split from `runner_key`, folded apart from the init key,
per process, and per resumed session (as Sebulba's actors are, sebulba.runner.actor_seed).
"""
from __future__ import annotations

import jax


def init_key(seed: int) -> jax.Array:
    """The key of the agent's `init` (its parameters), as Sebulba's learner draws it."""
    return jax.random.key(seed)


def runner_key(seed: int, start_update: int = 0) -> jax.Array:
    """The key every env stream of a process derives from: distinct per process, and fresh
    (but reproducible) for a run resumed at update > 0, as sebulba.runner.actor_seed."""
    key = jax.random.fold_in(jax.random.key(seed), 0x414E414B)  # apart from the init key
    key = jax.random.fold_in(key, start_update)
    return jax.random.fold_in(key, jax.process_index())
