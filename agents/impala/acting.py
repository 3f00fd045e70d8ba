"""IMPALA's actor: sample from the policy, keep the behaviour log-prob for V-trace."""
from __future__ import annotations

import flax.linen as nn

from agents import policy
from agents.impala.config import ImpalaConfig


def make_actor_step(network: nn.Module, cfg: ImpalaConfig):
    return policy.make_actor_step(network, cfg)
