"""Observation torsos: Nature DQN CNN, IMPALA ResNet, MinAtar's CNN and an MLP; a registry for
user torsos (and `auto`, one encoder per leaf of a dict observation: networks/encoders.py).

A torso maps a batch of observations (an array [B, ...] or a dict/tuple of them) to an
embedding [B, H]. `register_torso("my_net", MyNet)` makes `--config.network.torso=my_net`
build `MyNet(**config.network.torso_kwargs)` (docs/howto_network.md).

Initialisation (`layer_init`, from `config.network.torso_init`): "reference" (the default) is the
init of the implementation each built-in torso's configs cite: the Nature CNN as cleanrl's
ppo_atari_envpool.py (`layer_init`: orthogonal, gain sqrt 2, zero bias, on every conv and the
dense layer), the IMPALA ResNet as cleanba's cleanba_impala.py (flax's default convs, the dense
layer orthogonal sqrt 2 with zero bias), the MLP as cleanrl's classic-control and MuJoCo PPO
(orthogonal sqrt 2, zero bias), MinAtar's CNN as purejaxrl's MinAtar PPO (orthogonal sqrt 2).
"lecun" is flax's default (lecun_normal, zero bias) on every torso layer, to reproduce the
records made with it (docs/results.md).
The heads (networks/heads.py, actor_critic.py) are orthogonal 0.01 (policy) and 1.0 (value) in
both cases, as in cleanrl and cleanba.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from podracer.registry import Registry


INITS = ("reference", "lecun")


def _check_init(init: str) -> None:
    if init not in INITS:
        raise ValueError(f"torso init {init!r}; allowed: {INITS}.")


def _orthogonal(init: str) -> dict:
    """Kernel and bias init of a layer whose reference init is orthogonal(sqrt 2), zero bias
    (cleanrl's `layer_init`); flax's default under "lecun"."""
    _check_init(init)
    if init == "lecun":
        return {}
    return {"kernel_init": nn.initializers.orthogonal(np.sqrt(2)),
            "bias_init": nn.initializers.zeros}


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
    layer_init: str = "reference"     # INITS: cleanrl's orthogonal(sqrt 2) layers, or "lecun"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = preprocess_frames(x, self.channels_first)
        init = _orthogonal(self.layer_init)
        # VALID padding reproduces the paper's 20x20 -> 9x9 -> 7x7 maps.
        x = nn.relu(nn.Conv(32, (8, 8), strides=(4, 4), padding="VALID", **init)(x))
        x = nn.relu(nn.Conv(64, (4, 4), strides=(2, 2), padding="VALID", **init)(x))
        x = nn.relu(nn.Conv(64, (3, 3), strides=(1, 1), padding="VALID", **init)(x))
        x = x.reshape((x.shape[0], -1))
        return nn.relu(nn.Dense(512, **init)(x))


class MinAtarCNN(nn.Module):
    """The network of the MinAtar paper (Young & Tian 2019; github.com/kenjyoung/MinAtar
    examples/dqn.py and AC_lambda.py): one 3x3 convolution with 16 channels (stride 1, no
    padding: 10x10 -> 8x8), then a dense layer of 128 units, both ReLU.

    MinAtar observations are 0/1 grids [B, 10, 10, C] (gymnax; C: the game's channels), so the
    input is only cast to float32, not divided by 255 as the Atari torsos' frames are. The
    paper's code initialises with PyTorch's defaults; "reference" here is the orthogonal(sqrt 2)
    of the PPO implementations experiments/configs/ppo_minatar.py takes its hyperparameters
    from (purejaxrl, cleanrl), "lecun" flax's default.
    """

    channels: int = 16
    hidden: int = 128
    channels_first: bool = False      # True for [B, C, H, W] grids (MinAtar's own layout)
    layer_init: str = "reference"     # INITS

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x).astype(jnp.float32)
        if self.channels_first:
            x = jnp.transpose(x, (0, 2, 3, 1))
        init = _orthogonal(self.layer_init)
        x = nn.relu(nn.Conv(self.channels, (3, 3), strides=(1, 1), padding="VALID", **init)(x))
        x = x.reshape((x.shape[0], -1))
        return nn.relu(nn.Dense(self.hidden, **init)(x))


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
    layer_init: str = "reference"     # INITS: cleanba's (default convs, orthogonal dense), or
                                      # "lecun" (flax's default everywhere)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = preprocess_frames(x, self.channels_first)
        dense_init = _orthogonal(self.layer_init)
        for ch in self.channels:
            x = nn.Conv(ch, (3, 3), padding="SAME")(x)
            # window_shape by keyword, as jax2onnx's lowering of max_pool (the ONNX export) takes it
            x = nn.max_pool(x, window_shape=(3, 3), strides=(2, 2), padding="SAME")
            x = _ResidualBlock(ch)(x)
            x = _ResidualBlock(ch)(x)
        x = nn.relu(x)
        x = x.reshape((x.shape[0], -1))
        return nn.relu(nn.Dense(self.hidden, **dense_init)(x))


class MLP(nn.Module):
    """MLP torso for vector observations.

    Orthogonal init with gain sqrt(2) and zero bias (cleanrl's PPO) is the usual PPO/IMPALA
    choice; it keeps activations well scaled at the start of training.
    """

    hidden_sizes: Sequence[int] = (64, 64)
    # A name from ACTIVATIONS (what a config can say: `network.torso_kwargs={"activation":
    # "relu"}`) or a callable.
    activation: str | Callable[[jax.Array], jax.Array] = "tanh"
    layer_init: str = "reference"     # INITS: orthogonal(sqrt 2), or "lecun"

    @nn.compact
    def __call__(self, x: Any) -> jax.Array:
        # Flatten everything but the batch dim so [B, ...] shapes all work; the leaves of a
        # dict/tuple observation are flattened and concatenated (in jax.tree order).
        activation = _activation(self.activation)
        leaves = [jnp.asarray(v).astype(jnp.float32) for v in jax.tree.leaves(x)]
        x = jnp.concatenate([v.reshape((v.shape[0], -1)) for v in leaves], axis=-1)
        for size in self.hidden_sizes:
            x = nn.Dense(size, **_orthogonal(self.layer_init))(x)
            x = activation(x)
        return x


ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "elu": nn.elu, "gelu": nn.gelu,
               "silu": nn.silu}


def _activation(activation: str | Callable[[jax.Array], jax.Array]):
    if callable(activation):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(f"MLP activation={activation!r}; allowed: {sorted(ACTIVATIONS)} or a "
                         f"callable.")
    return ACTIVATIONS[activation]


def _check_torso(name: str, cls: Any) -> None:
    if not callable(cls):
        raise TypeError(f"torso {name!r} must be a flax module class (or a callable returning "
                        f"a module), got {cls!r}.")


# Reads like a mapping (`name in TORSOS`, `TORSOS[name]`, `sorted(TORSOS)`); the built-ins
# cannot be replaced, so a user module cannot silently change what "mlp" means in a config.
BUILTIN_TORSOS = {"nature_cnn": NatureCNN, "impala_resnet": ImpalaResNet, "mlp": MLP,
                  "minatar_cnn": MinAtarCNN}
# Built-in torsos sized for an accelerator: on a CPU backend the IMPALA ResNet trains at ~100
# env steps/s on 2 cores (README, throughput table); the command line then suggests another.
GPU_SIZED = frozenset({"impala_resnet"})


def is_gpu_sized(torso: str) -> bool:
    """Whether the torso named `torso` is sized for an accelerator (slow on a CPU)."""
    return torso in GPU_SIZED

# auto (networks/encoders.py) builds its encoders from this registry: named lazily.
TORSOS: Registry[Callable[..., nn.Module]] = Registry(
    "torso", builtins=BUILTIN_TORSOS, lazy={"auto": "networks.encoders:MultiInput"},
    how="networks.register_torso; load the module that registers yours with --import",
    check=_check_torso)


def register_torso(name: str, cls: Callable[..., nn.Module], *, overwrite: bool = False
                   ) -> None:
    """Makes `cls` buildable as `--config.network.torso=name` (kwargs from the config's
    `network.torso_kwargs`). `cls(**kwargs)` must return a flax module mapping observations
    [B, ...] (or a dict/tuple of them) to [B, H]. Registering the same class again (a module
    imported twice) is no clash; another under a taken name needs overwrite=True, and
    built-in names cannot be replaced."""
    TORSOS.register(name, cls, overwrite=overwrite)


def make_torso(name: str, **kwargs: Any) -> nn.Module:
    """Build a torso by name; kwargs go to the module's constructor."""
    cls = TORSOS.get(name)  # unknown: a ValueError listing the torsos and close matches
    try:
        return cls(**kwargs)
    except TypeError as e:  # e.g. a misspelt network.torso_kwargs field
        raise TypeError(f"torso {name!r} ({getattr(cls, '__name__', cls)}) cannot be built "
                        f"with arguments {kwargs}: {e}") from e
