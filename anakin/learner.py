"""The learner step of the Anakin program, per device, as the Sebulba learner runs it
(sebulba/learner.py): the agent's `learn_step` with its gradient mean over the mesh, the core's
non-finite guard (podracer/finite.py) and the count of actions taken on a mask that allowed
none (podracer/legal.py).
"""
from __future__ import annotations

import jax
from jax.sharding import Mesh, PartitionSpec as P

from anakin.topology import AXIS
from podracer.agent import Agent, Rollout
from podracer.finite import keep_finite
from podracer.legal import count_no_legal


def learn(agent: Agent, state, ro: Rollout, axis_name: str = AXIS):
    """The learner part, per device, as the Sebulba learner runs it (sebulba/learner.py):
    the agent's learn_step, then the non-finite guard and the count of actions taken on a
    mask that allowed none (podracer/legal.py)."""
    new_state, metrics = agent.learn_step(state, ro, axis_name)
    state, metrics = keep_finite(state, new_state, metrics, axis_name)
    return state, count_no_legal(ro, metrics, axis_name)


def make_learn_fn(agent: Agent, mesh: Mesh):
    """Jitted learn(state, rollout) -> (state, metrics) over `mesh` (rollout split along its
    env axis): Anakin's learner part alone, for tests against Sebulba's."""
    sharded = jax.shard_map(lambda s, r: learn(agent, s, r), mesh=mesh,
                            in_specs=(P(), P(None, AXIS)), out_specs=(P(), P()),
                            check_vma=False)
    return jax.jit(sharded)
