"""Actor-critic network: a torso followed by a policy head and a value head."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from networks.distributions import ActionDist, Categorical
from networks.heads import PolicyHead


class ActorCritic(nn.Module):
    """Torso with a policy head (networks/heads.py) and a linear value head.

    The action distribution is `action_dist` (see `networks.distributions.from_space`), or a
    Categorical over `num_actions` when none is given; `dist` returns it for the agents. For a
    Categorical the policy output is the logits array, as before the other heads existed.
    The value head uses gain 1.0. With `shared_torso=False` the value head gets its own copy
    of the torso, as is usual for small vector tasks (cleanrl's CartPole/MuJoCo agents), where
    the value loss would otherwise dominate the shared features.
    """

    torso: nn.Module
    num_actions: int = 0
    shared_torso: bool = True
    action_dist: ActionDist | None = None

    @property
    def dist(self) -> ActionDist:
        if self.action_dist is not None:
            return self.action_dist
        if self.num_actions < 1:
            raise ValueError(f"ActorCritic needs action_dist or num_actions >= 1, got "
                             f"num_actions={self.num_actions}.")
        return Categorical(self.num_actions)

    @nn.compact
    def __call__(self, obs: Any) -> tuple[Any, jax.Array]:
        """Return (policy params, e.g. logits [B, num_actions]; value [B]), float32."""
        h = self.torso(obs)
        h_value = h if self.shared_torso else self.torso.clone(parent=self, name="value_torso")(obs)
        policy = PolicyHead(self.dist, name="policy")(h)
        value = nn.Dense(
            1,
            kernel_init=nn.initializers.orthogonal(1.0),
            bias_init=nn.initializers.zeros,
        )(h_value)
        return policy, jnp.squeeze(value, -1).astype(jnp.float32)
