"""One schema per config section, and the ml_collections defaults generated from them.

An experiment config (a flax-examples `get_config()` ConfigDict) has these sections, each a
frozen dataclass that documents and checks its fields once:

| section | where in the ConfigDict | dataclass |
|---|---|---|
| runtime | top level | `sebulba.runtime_config.RuntimeConfig` |
| run | top level | `RunConfig` (below): run dir, resume, checkpoints, evaluation, console |
| distributed | `config.distributed` | `sebulba.distributed.DistributedConfig` |
| wandb | `config.wandb` | `WandbConfig` (below) |
| env | `config.env` | `sebulba.envs.EnvConfig` |
| network | `config.network` | `networks.NetworkConfig` |
| agent | `config.agent` | the agent's own (`agents.get_agent(name).config_cls`) |

`config_dict(instance)` turns a section's defaults into a ConfigDict (experiments/configs build
theirs this way, so a default lives in one place); `read(config)` turns a ConfigDict back into
typed sections (`Sections`), with a ConfigError naming the field for every bad value.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from typing import Any

import ml_collections

from sebulba.validation import ConfigError


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Run-level settings: which agent, where files go, checkpoints, evaluation, console."""

    agent_name: str = ""               # a registered agent (agents.get_agent); "" = the entry
                                       # point's own (impala_atari.py: impala, ppo_*.py: ppo)
    runtime: str = "sebulba"           # sebulba (EnvPool actors + learner) | anakin (JAX envs,
                                       # docs/anakin.md)
    run_dir: str = ""                  # "" = runs/<experiment>-<env>-s<seed>-<time>
    resume: str = ""                   # run dir or checkpoint dir to continue ("" = fresh run)
    checkpoint_every_updates: int = 0  # checkpoint every N updates (0 = off); also at the end
    checkpoint_every_minutes: float = 10.0  # ... and every M minutes (0 = off);
                                       # docs/checkpoints.md
    checkpoint_keep: int = 3           # newest checkpoints kept in <run_dir>/checkpoints (0 = none)
    eval_every_updates: int = 0        # every N updates, play eval_episodes whole games in the
                                       # background and log eval/* (0 = off); docs/checkpoints.md
    eval_episodes: int = 10            # games per evaluation (true scores, no episodic life)
    eval_num_envs: int = 8             # parallel envs of an evaluation
    eval_policy: str = "greedy"        # greedy (the distribution's mode) | sample
    console_every_s: float = 10.0      # seconds between console progress lines

    def __post_init__(self) -> None:
        for name in ("checkpoint_every_updates", "checkpoint_keep", "eval_every_updates"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a non-negative "
                                 f"integer.")
        for name in ("console_every_s", "checkpoint_every_minutes"):
            value = getattr(self, name)
            if not value >= 0 or value == float("inf"):
                raise ValueError(f"{name}={value!r} must be a non-negative number.")
        for name in ("eval_episodes", "eval_num_envs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be an integer >= 1.")


@dataclasses.dataclass(frozen=True)
class WandbConfig:
    """Weights & Biases, beside TensorBoard (sebulba/logging.py); off unless project is set."""

    project: str = ""                  # W&B project; "" = no W&B logging (the default)
    entity: str = ""                   # W&B user or team ("" = your default entity)
    group: str = ""                    # groups runs in the W&B UI, e.g. a sweep's name
    name: str = ""                     # run name ("" = the run dir's name)
    mode: str = ""                     # online | offline | disabled ("" = wandb's default)


def config_dict(instance: Any) -> ml_collections.ConfigDict:
    """A section's values as a ConfigDict: nested dicts become ConfigDicts and a field whose
    default is None becomes a typed placeholder, so `--config.x=...` can still set it."""
    hints = typing.get_type_hints(type(instance))
    out = ml_collections.ConfigDict()
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if value is None:
            out[f.name] = ml_collections.config_dict.placeholder(_optional_type(hints[f.name]))
        elif isinstance(value, dict):
            out[f.name] = ml_collections.ConfigDict(value)
        else:
            out[f.name] = value
    return out


def _optional_type(hint: Any) -> type:
    """The T of `T | None` (tuple for a sequence), for a placeholder."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    inner = args[0] if len(args) == 1 else object
    origin = typing.get_origin(inner)
    if origin is not None and origin not in (types.UnionType, typing.Union):
        return tuple if origin in (tuple, list, collections.abc.Sequence) else origin
    return inner if isinstance(inner, type) else object


def section_values(cls: type, config: ml_collections.ConfigDict | dict,
                   whole: bool = True) -> dict:
    """The values of a section for dataclass `cls`, as plain values (ConfigDicts to dicts,
    lists to tuples). `whole`: every key of `config` (a section of its own, so a misspelt key
    reaches the type check and fails naming it); else only `cls`'s fields (the top level,
    which several dataclasses share)."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key in config.keys():
        if not whole and key not in names:
            continue
        value = config[key]
        if isinstance(value, ml_collections.ConfigDict):
            value = value.to_dict()
        if isinstance(value, list):
            value = tuple(value)
        values[key] = value
    return values


def require_section(config: ml_collections.ConfigDict, name: str) -> ml_collections.ConfigDict:
    if name not in config or not isinstance(config[name], ml_collections.ConfigDict):
        raise ConfigError(f"the config has no `{name}` section (config.{name} = "
                          f"ml_collections.ConfigDict(...)); experiments/configs/common.py "
                          f"builds one for every section.")
    return config[name]
