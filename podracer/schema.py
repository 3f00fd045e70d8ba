"""Reading a config section: the one place a section of an experiment config (an ml_collections
ConfigDict) becomes its typed, checked dataclass, and the place its defaults come from.

Every section is a frozen dataclass that holds its fields, defaults, comments and rules
(its `__post_init__` raises ValueError starting with the field's name); docs/architecture.md
lists them. `read_section(cls, config, section)` extracts the section's values, checks every
key against the dataclass's fields and type hints, builds it, and turns any failure into a
ConfigError naming `section.field`, the value and what is allowed. `config_dict(instance)`
goes the other way: a section's defaults as a ConfigDict (experiments/configs build theirs this
way, so a default and its comment live in one place).
"""
from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from collections.abc import Sequence
from typing import Any, Mapping

import ml_collections
import numpy as np

from podracer.validation import ConfigError, close_matches, is_int, is_number


def read_section(cls: type, config: ml_collections.ConfigDict | Mapping, section: str,
                 whole: bool = True) -> Any:
    """`cls` built from `config`'s values. `section` prefixes messages ("" for the top level).
    `whole`: `config` is the section itself, so every key must be a field (a misspelt key fails
    naming the close match); else `config` is the top level, which several sections share,
    and only `cls`'s own fields are taken from it."""
    values = section_values(cls, config, whole)
    check_types(cls, values, section)
    try:
        return cls(**values)
    except ValueError as e:
        msg = str(e)
        if not section or msg.startswith(f"{section}."):
            raise ConfigError(msg) from e  # the message names the field already
        named = any(msg.startswith(f.name) for f in dataclasses.fields(cls))
        raise ConfigError(f"{section}.{msg}" if named else f"{section}: {msg}") from e


def require_section(config: ml_collections.ConfigDict, name: str) -> ml_collections.ConfigDict:
    """`config.<name>`, a ConfigError saying how to add it when it is missing."""
    if name not in config or not isinstance(config[name], ml_collections.ConfigDict):
        raise ConfigError(f"the config has no `{name}` section (config.{name} = "
                          f"ml_collections.ConfigDict(...)); experiments/configs/common.py "
                          f"builds one for every section.")
    return config[name]


def section_values(cls: type, config: ml_collections.ConfigDict | Mapping,
                   whole: bool = True) -> dict:
    """The values of a section for dataclass `cls`, as plain values (ConfigDicts to dicts,
    lists to tuples); see `read_section` for `whole`."""
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


def _type_ok(value: Any, hint: Any) -> bool | None:
    """Whether `value` fits the annotation `hint`; None when the hint is not one we check."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        results = [_type_ok(value, h) for h in typing.get_args(hint)]
        return None if all(r is None for r in results) else any(results)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, (bool, np.bool_))
    if hint is int:
        return is_int(value)
    if hint is float:
        return is_number(value)
    if hint is str:
        return isinstance(value, str)
    if origin in (Sequence, tuple, list) and typing.get_args(hint):
        inner = typing.get_args(hint)[0]
        return (isinstance(value, (list, tuple))
                and all(_type_ok(v, inner) is not False for v in value))
    return None


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def check_types(cls: type, values: Mapping[str, Any], section: str = "") -> None:
    """Raises ConfigError for unknown fields of dataclass `cls` or values of the wrong type."""
    prefix = f"{section}." if section else ""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key, value in values.items():
        if key not in hints:
            raise ConfigError(f"{prefix}{key} is not a field of {cls.__name__}; allowed: "
                              f"{', '.join(names)}.{close_matches(key, names)}")
        if _type_ok(value, hints[key]) is False:
            raise ConfigError(f"{prefix}{key}={value!r} has type {type(value).__name__}; "
                              f"expected {_type_name(hints[key])}.")


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
