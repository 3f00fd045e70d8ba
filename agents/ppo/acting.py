"""PPO's actor: sample from the policy; keep behaviour logits (mu, for the ratio and V-trace)
and the value (the on-policy anchor, so the learner need not recompute it)."""
from __future__ import annotations

import distrax
import flax.linen as nn
import jax


def make_actor_step(network: nn.Module):
    def actor_step(params, obs, key: jax.Array):
        logits, value = network.apply(params, obs)
        action = distrax.Categorical(logits=logits).sample(seed=key)
        return action, {"logits": logits, "value": value}

    return actor_step
