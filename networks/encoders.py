"""A torso for observations of several sensors: one encoder per leaf of a dict/tuple
observation, chosen from the leaf's shape and dtype, the encodings concatenated and fused.

`--config.network.torso=auto` (the default of `NetworkConfig`) builds `MultiInput`. Each leaf
(a camera image, a LiDAR sweep, a speed) gets an encoder by `auto_encoder` unless
`network.encoders` names one for its key (`"camera:impala_resnet,lidar:mlp"`; keys are the
leaves' paths, `/` between levels, a tuple's index as a number, `obs` for a plain array):
- an image (rank 3, or uint8 rank 2 as one channel; channels first when the first axis is the
  shorter, as EnvPool's frame stacks, else last, as gymnasium's) gets a CNN: the Nature CNN
  when both sides have at least 36 pixels (its first 8x8 stride-4 convolution needs them),
  MinAtar's one-convolution CNN for smaller grids (an occupancy grid, MinAtar's 10x10), an MLP
  below 3 pixels;
- a `Discrete(n)` leaf of the observation space (a gear, a traffic-light state) gets a learned
  embedding of `embed_size` (16) per value, when the caller passes the observation space
  (`vocab`: the run does; a one-hot float field is a vector and gets the MLP);
- anything else (vectors, small matrices, scalars, other integers) gets an MLP
  (`network.mlp_hidden_sizes`), flattened.
The encodings are concatenated and fused by `fusion_sizes` ReLU layers (256 by default: SB3's
CombinedExtractor gives each image 256 features, then its policy MLP mixes them; here the
fusion layer is that mixing, since the heads are linear). With a single leaf there is nothing to
fuse: the torso is that leaf's encoder, so a one-key dict trains exactly as the plain torso on
its array, and an observation that is one array gets that torso itself, parameters, names and
initial values alike (`auto` on CartPole is `mlp`; tests/networks/test_encoders.py).
Observation normalisation, where on, happens before the torso, leaf by leaf, as for any torso.

A uint8 image reaches every built-in encoder in [0, 1] (the Nature CNN and IMPALA ResNet divide
by 255 themselves; for MinAtar's CNN and the MLP this torso does); other dtypes are only cast
(MinAtar's 0/1 grids, float images as the env scales them).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from networks.torsos import INITS, TORSOS, _orthogonal, make_torso

# The built-in torsos that read images, and what each needs of one.
IMAGE_TORSOS = {"nature_cnn": 36, "minatar_cnn": 3, "impala_resnet": 1}
PLAIN_KEY = "obs"  # the key of an observation that is one array
# Built-in encoders that do not divide uint8 pixels by 255 themselves (nature_cnn and
# impala_resnet do): the torso does it for them.
_UNSCALED = ("minatar_cnn", "mlp")


def parse_encoders(text: str) -> tuple[tuple[str, str], ...]:
    """`"camera:nature_cnn, lidar:mlp"` -> (("camera", "nature_cnn"), ("lidar", "mlp")); a
    ValueError names a malformed part, a key given twice or a torso no registry knows."""
    out: list[tuple[str, str]] = []
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        key, sep, torso = (s.strip() for s in part.rpartition(":"))
        if not sep or not key or not torso:
            raise ValueError(f"encoders={text!r}: {part!r} is not KEY:TORSO; e.g. "
                             f"'camera:nature_cnn,lidar:mlp' (keys are the observation's "
                             f"leaves, '/' between levels).")
        if key in (k for k, _ in out):
            raise ValueError(f"encoders={text!r}: the key {key!r} is given twice.")
        if torso == "auto":
            raise ValueError(f"encoders={text!r}: {key}:{torso}: auto encodes a whole "
                             f"observation, not one leaf.")
        if torso not in TORSOS:
            raise ValueError(f"encoders={text!r}: {key}:{torso}: {TORSOS.unknown(torso)}")
        out.append((key, torso))
    return tuple(out)


def leaf_key(path: Sequence[Any]) -> str:
    """The key of a leaf from its jax tree path: dict keys and sequence indices joined by
    `/`; `obs` for the root (an observation that is one array)."""
    parts = []
    for p in path:
        for attr in ("key", "idx", "name"):
            if hasattr(p, attr):
                parts.append(str(getattr(p, attr)))
                break
        else:
            parts.append(str(p))
    return "/".join(parts) or PLAIN_KEY


def image_layout(shape: tuple[int, ...], dtype) -> tuple[bool, tuple[int, int]] | None:
    """(channels_first, (height, width)) of one observation of `shape` (no batch axis) if it
    is an image: rank 3, or uint8 rank 2 (one channel); else None."""
    if len(shape) == 2 and np.dtype(dtype) == np.uint8:
        return False, (shape[0], shape[1])
    if len(shape) != 3:
        return None
    first = shape[0] < shape[-1]  # the channel axis is the shorter end: [C, H, W] or [H, W, C]
    return first, (shape[1], shape[2]) if first else (shape[0], shape[1])


def auto_encoder(shape: tuple[int, ...], dtype) -> str:
    """The torso a leaf of `shape` (no batch axis) and `dtype` gets by default (module doc)."""
    image = image_layout(shape, dtype)
    if image is None:
        return "mlp"
    side = min(image[1])
    if side >= IMAGE_TORSOS["nature_cnn"]:
        return "nature_cnn"
    return "minatar_cnn" if side >= IMAGE_TORSOS["minatar_cnn"] else "mlp"


class MultiInput(nn.Module):
    """One encoder per observation leaf, concatenated and fused (see the module doc).

    `encoders`: (key, torso) overrides; `mlp_hidden_sizes`, `resnet_channels`, `layer_init`:
    what the built-in encoders are built with (`network.mlp_hidden_sizes`, ...);
    `fusion_sizes`: the ReLU layers after the concatenation of two or more encodings.
    """

    encoders: tuple[tuple[str, str], ...] = ()
    vocab: tuple[tuple[str, int, int], ...] = ()  # (key, n, start) of Discrete leaves
    embed_size: int = 16
    fusion_sizes: Sequence[int] = (256,)
    mlp_hidden_sizes: Sequence[int] = (64, 64)
    resnet_channels: Sequence[int] = (16, 32, 32)
    layer_init: str = "reference"     # INITS, for every built-in encoder and the fusion

    def choices(self, obs: Any) -> list[tuple[str, str, tuple[int, ...], Any]]:
        """(key, torso, shape without the batch axis, dtype) of every leaf of a batch `obs`,
        in jax tree order; a ValueError names an override whose key is not a leaf."""
        flat = jax.tree_util.tree_flatten_with_path(obs)[0]
        rows = [(leaf_key(path), tuple(np.shape(x))[1:], jnp.result_type(x))
                for path, x in flat]
        overrides = dict(self.encoders)
        unknown = sorted(set(overrides) - {k for k, _, _ in rows})
        if unknown:
            raise ValueError(f"encoders: no observation leaf {unknown[0]!r}; the leaves are "
                             f"{', '.join(f'{k} {s}' for k, s, _ in rows)}.")
        names = [_param_name(k) for k, _, _ in rows]
        clash = sorted({n for n in names if names.count(n) > 1 or n.startswith("fusion_")})
        if clash:
            raise ValueError(f"observation leaves {[k for k, _, _ in rows]} give the parameter "
                             f"name {clash[0]!r} twice (or a fusion layer's): rename a key.")
        embedded = {k for k, _, _ in self.vocab}
        return [(k, overrides.get(k) or (EMBED if k in embedded else auto_encoder(s, d)), s, d)
                for k, s, d in rows]

    def _encoder(self, key: str, torso: str, shape: tuple[int, ...], dtype, plain: bool
                 ) -> nn.Module:
        if torso == EMBED:
            n, start = {k: (n, start) for k, n, start in self.vocab}[key]
            module = Embedding(n, start, self.embed_size)
        else:
            module = make_torso(torso, **self._torso_kwargs(key, torso, shape, dtype))
        if plain:  # one array: this torso is its encoder, parameters and all
            nn.share_scope(self, module)
            return module
        # Named by its key: params["torso"]["camera"], not an order-dependent "NatureCNN_0".
        return module.clone(parent=self, name=_param_name(key))

    def _torso_kwargs(self, key: str, torso: str, shape: tuple[int, ...], dtype) -> dict:
        """What a registry torso is built with for the leaf `key`; a ValueError for an image
        torso given a leaf it cannot take."""
        kwargs: dict[str, Any] = {}
        if torso in IMAGE_TORSOS:
            image = image_layout(shape, dtype)
            if image is None or min(image[1]) < IMAGE_TORSOS[torso]:
                need = (f"an image with both sides >= {IMAGE_TORSOS[torso]} pixels (rank 3, "
                        f"or uint8 rank 2)")
                raise ValueError(f"encoders: {key}:{torso} cannot take the leaf {key!r} of "
                                 f"shape {shape} ({np.dtype(dtype).name}): {torso} needs "
                                 f"{need}; allowed for it: mlp"
                                 f"{', minatar_cnn' if image and min(image[1]) >= 3 else ''}.")
            kwargs["channels_first"] = image[0]
        if torso == "mlp":
            kwargs["hidden_sizes"] = tuple(self.mlp_hidden_sizes)
        elif torso == "impala_resnet":
            kwargs["channels"] = tuple(self.resnet_channels)
        if torso in ("mlp", "nature_cnn", "minatar_cnn", "impala_resnet"):
            kwargs["layer_init"] = self.layer_init
        return kwargs

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        if self.layer_init not in INITS:
            raise ValueError(f"layer_init={self.layer_init!r}; allowed: {INITS}.")
        leaves = jax.tree.leaves(obs)
        plain = is_plain(obs)
        outs = []
        for (key, torso, shape, dtype), x in zip(self.choices(obs), leaves):
            image = image_layout(shape, dtype) is not None
            if image and len(shape) == 2:
                x = x[..., None]  # a uint8 [H, W] image: one channel, last
            if image and np.dtype(dtype) == np.uint8 and torso in _UNSCALED:
                x = jnp.asarray(x, jnp.float32) / 255.0  # pixels reach every encoder in [0, 1]
            outs.append(self._encoder(key, torso, shape, dtype, plain)(x))
        if len(outs) == 1:
            return outs[0]
        x = jnp.concatenate([o.reshape((o.shape[0], -1)).astype(jnp.float32) for o in outs], -1)
        for i, size in enumerate(self.fusion_sizes):
            x = nn.relu(nn.Dense(size, name=f"fusion_{i}", **_orthogonal(self.layer_init))(x))
        return x


EMBED = "embed"  # the encoder of a Discrete leaf (not a torso of the registry)


class Embedding(nn.Module):
    """A learned vector per value of a Discrete(n) leaf (values start .. start + n - 1, any
    shape per env): [B, ...] integers -> [B, prod(...) * features]."""

    num: int
    start: int = 0
    features: int = 16

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        index = jnp.clip(jnp.asarray(x).astype(jnp.int32) - self.start, 0, self.num - 1)
        out = nn.Embed(self.num, self.features)(index)
        return out.reshape((out.shape[0], -1))


def discrete_leaves(space: Any) -> tuple[tuple[str, int, int], ...]:
    """(key, n, start) of every Discrete leaf of a gymnasium observation space (keys as
    `leaf_key` names the observation's leaves); () for None or a space without one."""
    from gymnasium import spaces
    out: list[tuple[str, int, int]] = []

    def walk(s, path):
        if isinstance(s, spaces.Dict):
            for k, sub in s.spaces.items():
                walk(sub, path + [str(k)])
        elif isinstance(s, spaces.Tuple):
            for i, sub in enumerate(s.spaces):
                walk(sub, path + [str(i)])
        elif isinstance(s, spaces.Discrete):
            out.append(("/".join(path) or PLAIN_KEY, int(s.n), int(s.start)))
    if space is not None:
        walk(space, [])
    return tuple(out)


def is_plain(obs: Any) -> bool:
    """Whether `obs` is one array (not a dict/tuple of them)."""
    return jax.tree_util.treedef_is_leaf(jax.tree.structure(obs))


def _param_name(key: str) -> str:
    """A parameter-tree name for a leaf key (flax names: no '/')."""
    return re.sub(r"[^0-9A-Za-z_]", "_", key)


def describe(torso: MultiInput, obs: Any) -> list[str]:
    """One line per leaf, `key shape dtype -> encoder`, for the start-up lines; checks every
    choice on `obs` (a batch, or ShapeDtypeStructs) by tracing the torso (no compute): a
    ValueError names an unknown key or a leaf an encoder cannot take."""
    choices = torso.choices(obs)
    jax.eval_shape(torso.init, jax.random.key(0), obs)
    sizes = {k: n for k, n, _ in torso.vocab}
    return [f"{key} {shape} {np.dtype(dtype).name} -> "
            f"{f'embed ({sizes[key]} values)' if name == EMBED else name}"
            for key, name, shape, dtype in choices]
