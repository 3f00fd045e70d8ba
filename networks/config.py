"""The `config.network` section: its schema (`NetworkConfig`) and its builder (`build_network`).

`NetworkConfig` is the one definition of the section: its fields, defaults and rules. The
experiment configs' ml_collections defaults come from it, and `podracer.validation.build(
NetworkConfig, values, "network")` checks a config (each rule's message starts with the field
name, so the error reads "network.<field>=..."). `build_network(cfg, action_space)` turns it
into the actor-critic: the configured torso, the policy head for the action space, and an LSTM
core when `lstm_size` > 0.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import flax.linen as nn

from networks.actor_critic import ActorCritic, RecurrentActorCritic
from networks.distributions import (BOUNDS, ActionDist, MultiCategorical, from_space,
                                    mask_width)
from networks.encoders import discrete_leaves, parse_encoders
from networks.torsos import BUILTIN_TORSOS, INITS, TORSOS, make_torso
from podracer.validation import is_int, is_number

_SIZE_FIELDS = ("mlp_hidden_sizes", "resnet_channels")


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The actor-critic network; every field can be set as `--config.network.<field>=...`."""

    # auto: each observation leaf the encoder its shape and dtype call for (networks/
    # encoders.py; for one array that torso itself: mlp for a vector) | nature_cnn |
    # impala_resnet | mlp (dict leaves flattened together) | minatar_cnn | a registered torso
    torso: str = "auto"
    mlp_hidden_sizes: tuple[int, ...] = (64, 64)       # used when torso == mlp (or auto's)
    resnet_channels: tuple[int, ...] = (16, 32, 32)   # used when torso == impala_resnet (...)
    shared_torso: bool = True          # False: the value head gets its own torso copy
    continuous_bounds: str = "clip"    # Box actions: "clip" (censored Gaussian) or "tanh"
    state_dependent_std: bool = False  # Box actions: False a learned log-std vector; True a head
    init_log_std: float = 0.0          # Box actions: initial log-std of the Gaussian
    lstm_size: int = 0                 # > 0: an LSTM core of this size (docs/recurrent.md)
    # Built-in torsos' layer init (networks/torsos.py): "reference" = the cited implementation's
    # (nature_cnn: cleanrl's orthogonal sqrt 2; impala_resnet: cleanba's; mlp: orthogonal
    # sqrt 2); "lecun" = flax's default (to reproduce records made with it, docs/results.md).
    torso_init: str = "reference"
    # Constructor arguments of the torso, built-in or registered (networks.register_torso);
    # for mlp/impala_resnet they override the sizes above.
    torso_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    # torso == auto (networks/encoders.py: one encoder per leaf of a dict observation):
    # per-leaf encoders instead of the automatic ones, "KEY:TORSO,..." (e.g.
    # "camera:impala_resnet,lidar:mlp"; "" = all automatic), and the ReLU fusion layers after
    # the encodings' concatenation ((256,): SB3's CombinedExtractor's 256 features per image).
    encoders: str = ""
    fusion_sizes: tuple[int, ...] = (256,)
    # With a legal-action mask (env.action_mask_key): False = the mask only masks the policy's
    # logits; True = the torso also gets it as an observation entry.
    torso_sees_mask: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.torso, str) and self.torso in TORSOS):
            raise ValueError(f"torso={self.torso!r}: {TORSOS.unknown(self.torso)}")
        for name in _SIZE_FIELDS:
            sizes = getattr(self, name)
            if not (isinstance(sizes, (list, tuple)) and len(sizes) > 0
                    and all(is_int(n) and n > 0 for n in sizes)):
                raise ValueError(f"{name}={sizes!r} must be a non-empty tuple of positive "
                                 f"integers.")
            # ml_collections gives tuples, JSON (config.json, checkpoints) gives lists.
            object.__setattr__(self, name, tuple(int(n) for n in sizes))
        if self.continuous_bounds not in BOUNDS:
            raise ValueError(f"continuous_bounds={self.continuous_bounds!r} must be one of "
                             f"{BOUNDS} (clip: a censored Gaussian; tanh: a squashed one).")
        if not (is_number(self.init_log_std) and math.isfinite(self.init_log_std)):
            raise ValueError(f"init_log_std={self.init_log_std!r} must be a finite number.")
        if not (is_int(self.lstm_size) and self.lstm_size >= 0):
            raise ValueError(f"lstm_size={self.lstm_size!r} must be an integer >= 0 (0: "
                             f"feed-forward; > 0: an LSTM core of that size between torso and "
                             f"heads, docs/recurrent.md).")
        if self.torso_init not in INITS:
            raise ValueError(f"torso_init={self.torso_init!r} must be one of {INITS} "
                             f"(networks/torsos.py).")
        if self.torso_init != "reference" and self.torso not in (*BUILTIN_TORSOS,
                                                                 "auto"):
            raise ValueError(f"torso_init={self.torso_init!r} applies to the built-in torsos "
                             f"{sorted(BUILTIN_TORSOS)}; torso={self.torso!r} sets its own "
                             f"init (pass it in torso_kwargs if it takes one).")
        if not isinstance(self.encoders, str):
            raise ValueError(f"encoders={self.encoders!r} must be a string 'KEY:TORSO,...'.")
        parse_encoders(self.encoders)  # its ValueError names the part and what is allowed
        if self.encoders and self.torso != "auto":
            raise ValueError(f"encoders={self.encoders!r} applies to torso='auto' (one "
                             f"encoder per observation leaf); torso={self.torso!r}.")
        sizes = self.fusion_sizes
        if not (isinstance(sizes, (list, tuple)) and all(is_int(n) and n > 0 for n in sizes)):
            raise ValueError(f"fusion_sizes={sizes!r} must be a tuple of positive integers "
                             f"(() = the encodings concatenated, no fusion layer).")
        object.__setattr__(self, "fusion_sizes", tuple(int(n) for n in sizes))
        kwargs = _as_dict(self.torso_kwargs)
        if kwargs is None or not all(isinstance(k, str) for k in kwargs):
            raise ValueError(f"torso_kwargs={self.torso_kwargs!r} must be a dict of the "
                             f"torso's constructor arguments (string keys).")
        object.__setattr__(self, "torso_kwargs", kwargs)


def build_network(cfg: NetworkConfig, action_space: Any, observation_space: Any = None,
                  action_mask_key: str = "", mask_may_be_empty: bool = False) -> nn.Module:
    """ActorCritic with the configured torso and the policy head for `action_space`; a
    RecurrentActorCritic with an LSTM core of `cfg.lstm_size` when that is > 0.
    `observation_space` (gymnasium, of one env): the `auto` torso embeds its Discrete leaves
    (without it, they get an MLP like any integer array). `action_mask_key`: the observation
    entry whose legal-action mask masks the policy (`resolve_mask_key`; "" = none);
    `mask_may_be_empty`: a step whose mask allows nothing is the env's rule (the runtime does
    not stop on it, podracer/legal.py).

    An unsupported action space raises `from_space`'s ValueError (the caller names the env);
    torso_kwargs the torso does not take raise `make_torso`'s TypeError.
    """
    if not isinstance(cfg, NetworkConfig):
        raise TypeError(f"build_network takes a networks.NetworkConfig, got "
                        f"{type(cfg).__name__}; build one with "
                        f"podracer.validation.build(NetworkConfig, values, 'network').")
    kwargs: dict[str, Any] = {}
    if cfg.torso in BUILTIN_TORSOS:
        kwargs["layer_init"] = cfg.torso_init
    if cfg.torso == "mlp":
        kwargs["hidden_sizes"] = tuple(cfg.mlp_hidden_sizes)
    elif cfg.torso == "impala_resnet":
        kwargs["channels"] = tuple(cfg.resnet_channels)
    elif cfg.torso == "auto":
        kwargs.update(layer_init=cfg.torso_init, encoders=parse_encoders(cfg.encoders),
                      vocab=discrete_leaves(observation_space),
                      fusion_sizes=tuple(cfg.fusion_sizes),
                      mlp_hidden_sizes=tuple(cfg.mlp_hidden_sizes),
                      resnet_channels=tuple(cfg.resnet_channels))
    kwargs.update(_plain(cfg.torso_kwargs))
    dist = from_space(action_space, bounds=cfg.continuous_bounds,
                      state_dependent_std=bool(cfg.state_dependent_std),
                      init_log_std=float(cfg.init_log_std))
    torso = make_torso(cfg.torso, **kwargs)
    masking = dict(action_mask_key=resolve_mask_key(action_mask_key, observation_space, dist),
                   torso_sees_mask=bool(cfg.torso_sees_mask),
                   mask_may_be_empty=bool(mask_may_be_empty))
    if cfg.lstm_size > 0:
        return RecurrentActorCritic(torso=torso, lstm_size=int(cfg.lstm_size), action_dist=dist,
                                    shared_torso=bool(cfg.shared_torso), **masking)
    return ActorCritic(torso=torso, action_dist=dist, shared_torso=bool(cfg.shared_torso),
                       **masking)


MASK_KEYS = ("action_mask", "legal_action_mask")  # jumanji's, pgx's


def resolve_mask_key(requested: str, observation_space: Any, dist: ActionDist) -> str:
    """The observation entry that masks the policy: `requested` checked against the space,
    or for "auto" the first of MASK_KEYS the (Dict) observation has whose shape fits the
    action head ("" when none does: an auto mask that cannot apply is left to the torso, as
    any other entry). ValueError (starting "action_mask_key=") for an explicit key that is no
    entry, a mask of the wrong shape, or actions no mask applies to."""
    from gymnasium import spaces
    entries = (observation_space.spaces if isinstance(observation_space, spaces.Dict)
               else None)
    if requested == "auto":
        for key in MASK_KEYS:
            if entries is not None and key in entries:
                try:
                    width = mask_width(dist)
                except ValueError:
                    return ""
                return key if tuple(entries[key].shape) == (width,) else ""
        return ""
    if not requested or observation_space is None:  # none, or checked when traced
        return requested
    if entries is None or requested not in entries:
        listed = sorted(entries) if entries is not None else "none: the observation is one array"
        raise ValueError(f"action_mask_key={requested!r} is no entry of the observation "
                         f"(entries: {listed}).")
    try:
        width = mask_width(dist)
    except ValueError as e:
        raise ValueError(f"action_mask_key={requested!r}: {e}") from None
    shape = tuple(entries[requested].shape)
    if shape != (width,):
        per = ("each part's entries, concatenated" if isinstance(dist, MultiCategorical)
               else "one entry per action")
        raise ValueError(f"action_mask_key={requested!r}: the mask has shape {shape}; the "
                         f"action head {dist} takes ({width},) ({per}).")
    return requested


def _as_dict(value: Any) -> dict | None:
    """A plain dict of a Mapping or an ml_collections ConfigDict (which is no Mapping, and is
    not imported here: networks do not depend on the config library); None otherwise."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    return dict(value) if isinstance(value, Mapping) else None


def _plain(value: Any) -> Any:
    """Lists become tuples (flax module fields must be hashable), nested mappings dicts."""
    as_dict = _as_dict(value)
    if as_dict is not None:
        return {k: _plain(v) for k, v in as_dict.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value
