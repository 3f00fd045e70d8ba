"""The example's own torso: a small CNN on the occupancy grid and an MLP on the sensor vector,
concatenated. Registered as `driving_net` (examples/driving/__init__.py), so the experiment
config selects it with `network.torso="driving_net"` and sizes it with `network.torso_kwargs`.
"""
from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class DrivingTorso(nn.Module):
    """{"grid": uint8 [B, H, W, C], "state": float32 [B, D]} -> embedding [B, hidden]."""

    conv_channels: Sequence[int] = (16, 32)
    state_hidden: int = 64
    hidden: int = 128

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array]) -> jax.Array:
        # uint8 frames travel to the device as they are (4x smaller) and are scaled here.
        g = obs["grid"].astype(jnp.float32) / 255.0
        for ch in self.conv_channels:  # stride 2: 16x16 -> 8x8 -> 4x4
            g = nn.relu(nn.Conv(ch, (3, 3), strides=(2, 2), padding="SAME")(g))
        g = g.reshape((g.shape[0], -1))
        ortho = nn.initializers.orthogonal(np.sqrt(2))
        v = nn.tanh(nn.Dense(self.state_hidden, kernel_init=ortho)(obs["state"]))
        h = jnp.concatenate([g, v], axis=-1)
        return nn.relu(nn.Dense(self.hidden, kernel_init=ortho)(h))
