"""PPO's actor: sample from the policy; keep the behaviour log-prob and distribution
parameters (mu, for the ratio, V-trace and the KL terms) and the value (the on-policy anchor,
so the learner need not recompute it)."""
from __future__ import annotations

import flax.linen as nn

from agents import policy
from agents.ppo.config import PPOConfig


def make_actor_step(network: nn.Module, cfg: PPOConfig):
    return policy.make_actor_step(network, cfg, keep_policy=True, keep_value=True)
