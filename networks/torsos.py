"""Observation torsos: Nature DQN CNN, IMPALA ResNet and an MLP; a registry for user torsos.

A torso maps a batch of observations (an array [B, ...] or a dict/tuple of them) to an
embedding [B, H]. `register_torso("my_net", MyNet)` makes `--config.network.torso=my_net`
build `MyNet(**config.network.torso_kwargs)` (docs/howto_network.md).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def preprocess_frames(x: jax.Array, channels_first: bool) -> jax.Array:
    """Cast frames to float32 in [0, 1] and lay them out as NHWC.

    Done inside the network so actors can ship uint8 frames (4x smaller)
    to the device. Flax convs expect channels last, EnvPool gives [B,C,H,W].
    The input is divided by 255 whatever its dtype, so uint8 x and
    float32 x give the same result.
    """
    x = jnp.asarray(x).astype(jnp.float32) / 255.0
    if channels_first:
        x = jnp.transpose(x, (0, 2, 3, 1))
    return x


class NatureCNN(nn.Module):
    """DQN torso of Mnih et al. (2015): 3 convs + dense 512, all ReLU."""

    channels_first: bool = True

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = preprocess_frames(x, self.channels_first)
        # VALID padding reproduces the paper's 20x20 -> 9x9 -> 7x7 maps.
        x = nn.relu(nn.Conv(32, (8, 8), strides=(4, 4), padding="VALID")(x))
        x = nn.relu(nn.Conv(64, (4, 4), strides=(2, 2), padding="VALID")(x))
        x = nn.relu(nn.Conv(64, (3, 3), strides=(1, 1), padding="VALID")(x))
        x = x.reshape((x.shape[0], -1))
        return nn.relu(nn.Dense(512)(x))


class _ResidualBlock(nn.Module):
    """Pre-activation residual block: relu, conv, relu, conv, add."""

    channels: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.Conv(self.channels, (3, 3), padding="SAME")(nn.relu(x))
        y = nn.Conv(self.channels, (3, 3), padding="SAME")(nn.relu(y))
        return x + y


class ImpalaResNet(nn.Module):
    """The "deep" network of Espeholt et al. (2018), Fig. 3."""

    channels: Sequence[int] = (16, 32, 32)
    hidden: int = 256
    channels_first: bool = True

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = preprocess_frames(x, self.channels_first)
        for ch in self.channels:
            x = nn.Conv(ch, (3, 3), padding="SAME")(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            x = _ResidualBlock(ch)(x)
            x = _ResidualBlock(ch)(x)
        x = nn.relu(x)
        x = x.reshape((x.shape[0], -1))
        return nn.relu(nn.Dense(self.hidden)(x))


class MLP(nn.Module):
    """MLP torso for vector observations.

    Orthogonal init with gain sqrt(2) and zero bias is the usual PPO/IMPALA
    choice; it keeps activations well scaled at the start of training.
    """

    hidden_sizes: Sequence[int] = (64, 64)
    activation: Callable[[jax.Array], jax.Array] = nn.tanh

    @nn.compact
    def __call__(self, x: Any) -> jax.Array:
        # Flatten everything but the batch dim so [B, ...] shapes all work; the leaves of a
        # dict/tuple observation are flattened and concatenated (in jax.tree order).
        leaves = [jnp.asarray(v).astype(jnp.float32) for v in jax.tree.leaves(x)]
        x = jnp.concatenate([v.reshape((v.shape[0], -1)) for v in leaves], axis=-1)
        for size in self.hidden_sizes:
            x = nn.Dense(
                size,
                kernel_init=nn.initializers.orthogonal(np.sqrt(2)),
                bias_init=nn.initializers.zeros,
            )(x)
            x = self.activation(x)
        return x


TORSOS: dict[str, type[nn.Module]] = {
    "nature_cnn": NatureCNN,
    "impala_resnet": ImpalaResNet,
    "mlp": MLP,
}
_BUILTIN = frozenset(TORSOS)


def register_torso(name: str, cls: Callable[..., nn.Module], *, overwrite: bool = False
                   ) -> None:
    """Makes `cls` buildable as `--config.network.torso=name` (kwargs from the config's
    `network.torso_kwargs`). `cls(**kwargs)` must return a flax module mapping observations
    [B, ...] (or a dict/tuple of them) to [B, H]. Built-in names cannot be replaced."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"torso name must be a non-empty string, got {name!r}.")
    if not callable(cls):
        raise TypeError(f"torso {name!r} must be a flax module class (or a callable returning "
                        f"a module), got {cls!r}.")
    old = TORSOS.get(name)
    # The same class again (a module imported twice, importlib.reload) is not a clash.
    same = old is cls or (old is not None and _qualified(old) == _qualified(cls))
    if old is not None and not same and (name in _BUILTIN or not overwrite):
        raise ValueError(f"torso {name!r} is already registered ({TORSOS[name]!r})"
                         + ("." if name in _BUILTIN else "; pass overwrite=True to replace it."))
    TORSOS[name] = cls


def _qualified(obj: Any) -> tuple[str, str] | object:
    """Module and name of a top-level function or class; a unique token for anything else
    (lambdas and local definitions share names, so they never count as the same)."""
    name = getattr(obj, "__qualname__", "<")
    return (obj.__module__, name) if "<" not in name else object()


def make_torso(name: str, **kwargs: Any) -> nn.Module:
    """Build a torso by name; kwargs go to the module's constructor."""
    try:
        cls = TORSOS[name]
    except KeyError:
        raise ValueError(
            f"unknown torso {name!r}; expected one of {sorted(TORSOS)}"
        ) from None
    try:
        return cls(**kwargs)
    except TypeError as e:  # e.g. a misspelt network.torso_kwargs field
        raise TypeError(f"torso {name!r} ({getattr(cls, '__name__', cls)}) cannot be built "
                        f"with arguments {kwargs}: {e}") from e
