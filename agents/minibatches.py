"""Minibatches of env columns, shared by the agents that split an update into several SGD
steps (PPO's epochs, IMPALA's `num_minibatches`).

Each learner device splits its own env columns: column i goes to minibatch i mod M (after an
optional permutation), so N learner devices, each averaging its gradient with the others per
step, take exactly the steps one device would take on the whole batch.
"""
from __future__ import annotations



def require_divisible(num_minibatches: int, per_learner: int, what: str = "environments"
                      ) -> None:
    """`num_minibatches` must divide what each learner device splits per update:
    `per_learner` env columns (`what`="environments") or steps."""
    if per_learner % num_minibatches != 0:
        raise ValueError(
            f"agent.num_minibatches={num_minibatches} must divide the "
            f"{per_learner} {what} each learner device holds per update "
            f"(num_envs / learner devices).")
