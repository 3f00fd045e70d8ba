"""IMPALA (Espeholt et al. 2018): V-trace actor-critic on the Sebulba runtime."""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents.impala.acting import make_actor_step
from agents.impala.config import ImpalaConfig
from agents.impala.learning import LearnerState, make_learn_step, make_optimizer
from sebulba.agent import Agent


def make_agent(network: nn.Module, cfg: ImpalaConfig, num_updates: int) -> Agent:
    """Builds the IMPALA agent for a policy/value `network` returning (logits, value)."""
    optimizer, lr = make_optimizer(cfg, num_updates)

    def init(key: jax.Array, obs) -> LearnerState:
        params = network.init(key, obs)
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32))

    return Agent(init=init, actor_params=lambda s: s.params,
                 actor_step=make_actor_step(network),
                 learn_step=make_learn_step(network, cfg, optimizer, lr))


__all__ = ["ImpalaConfig", "LearnerState", "make_agent"]
