"""Policy heads: from the torso's embedding to the parameters of an `ActionDist`.

One module, `PolicyHead(dist)`, builds the head that matches the distribution (see
networks/distributions.py for the shapes): logits for (multi-)categoricals, a mean plus a
state-independent (a learned vector, as cleanrl / openai baselines) or state-dependent log-std
for Gaussians, and one sub-head per part for mixed (Joint) actions.

Initialisation: logits and Gaussian means use orthogonal(0.01) so the initial policy is near
uniform / centred (Andrychowicz et al. 2021, "What matters in on-policy RL", and cleanrl).
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from networks.distributions import (ActionDist, Categorical, DiagGaussian, Joint,
                                    MultiCategorical)


def _dense(size: int, bias: float = 0.0) -> nn.Dense:
    return nn.Dense(size, kernel_init=nn.initializers.orthogonal(0.01),
                    bias_init=nn.initializers.constant(bias))


class PolicyHead(nn.Module):
    """Outputs the parameters of `dist` for a batch of embeddings [B, H] (float32)."""

    dist: ActionDist

    @nn.compact
    def __call__(self, h: jax.Array):
        d = self.dist
        if isinstance(d, Categorical):
            return _dense(d.num_actions)(h).astype(jnp.float32)
        if isinstance(d, MultiCategorical):
            return _dense(sum(d.nvec))(h).astype(jnp.float32)
        if isinstance(d, DiagGaussian):
            mean = _dense(d.dim)(h).astype(jnp.float32)
            if d.state_dependent_std:
                log_std = _dense(d.dim, d.init_log_std)(h).astype(jnp.float32)
            else:
                log_std = self.param("log_std", nn.initializers.constant(d.init_log_std),
                                     (d.dim,), jnp.float32)
                log_std = jnp.broadcast_to(log_std, mean.shape)
            # exp(log_std) must neither vanish nor explode (a bounded range, as SAC's heads).
            return {"mean": mean, "log_std": jnp.clip(log_std, d.min_log_std, d.max_log_std)}
        if isinstance(d, Joint):
            names = d.keys if d.keys is not None else [f"part_{i}" for i in range(len(d.parts))]
            outs = [PolicyHead(sub, name=str(n))(h) for n, sub in zip(names, d.parts)]
            return tuple(outs) if d.keys is None else dict(zip(d.keys, outs))
        raise TypeError(f"no policy head for distribution {d!r}.")
