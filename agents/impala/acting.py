"""IMPALA's actor: sample from the policy, keep the behaviour logits for V-trace."""
from __future__ import annotations

import distrax
import flax.linen as nn
import jax


def make_actor_step(network: nn.Module):
    def actor_step(params, obs, key: jax.Array):
        logits, _ = network.apply(params, obs)
        action = distrax.Categorical(logits=logits).sample(seed=key)
        return action, {"logits": logits}

    return actor_step
