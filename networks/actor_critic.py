"""Actor-critic network: a torso followed by policy and value heads."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


class ActorCritic(nn.Module):
    """Torso with a linear policy head and a linear value head.

    The policy head uses a tiny init (orthogonal, 0.01) so the initial
    policy is near uniform; the value head uses gain 1.0. With
    `shared_torso=False` the value head gets its own copy of the torso, as is
    usual for small vector tasks (cleanrl's CartPole/MuJoCo agents), where the
    value loss would otherwise dominate the shared features.
    """

    torso: nn.Module
    num_actions: int
    shared_torso: bool = True

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Return (logits [B, num_actions], value [B]), both float32."""
        h = self.torso(obs)
        h_value = h if self.shared_torso else self.torso.clone(parent=self, name="value_torso")(obs)
        logits = nn.Dense(
            self.num_actions,
            kernel_init=nn.initializers.orthogonal(0.01),
            bias_init=nn.initializers.zeros,
        )(h)
        value = nn.Dense(
            1,
            kernel_init=nn.initializers.orthogonal(1.0),
            bias_init=nn.initializers.zeros,
        )(h_value)
        return logits.astype(jnp.float32), jnp.squeeze(value, -1).astype(jnp.float32)
