"""Config validation up front: every mistake we can see is reported before any thread starts,
any environment is built or anything compiles, with a message that names the field, the bad
value and what is allowed.

Used by `experiments.wiring.read` (the whole experiment ConfigDict) and by the runtime
(`runtime_config.validate_runtime_config`). Only static checks live here: nothing touches JAX devices,
because a multi-host run must join `jax.distributed` before the first device query; device ids
are checked by `topology.make_topology` right after joining.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import socket
import tempfile
import types
import typing
from collections.abc import Sequence
from typing import Any, Mapping

import numpy as np


class ConfigError(ValueError):
    """A config field has a bad value; the message names the field, the value and the rule."""


def close_matches(value: Any, allowed: Sequence[Any]) -> str:
    """A suffix naming the allowed values closest to a misspelt one (empty when none is)."""
    names = [str(a) for a in allowed]
    close = difflib.get_close_matches(str(value), names, n=3, cutoff=0.6)
    return f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def one_of(field: str, value: Any, allowed: Sequence[Any], what: str) -> None:
    """Raises ConfigError("field=value is not <what>; allowed: [...]. Did you mean ...?")."""
    require(value in allowed, field, value,
            f"is not {what}; allowed: {list(allowed)}.{close_matches(value, allowed)}")


def is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_number(v: Any) -> bool:
    return is_int(v) or isinstance(v, (float, np.floating))


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


def build(cls: type, values: Mapping[str, Any], section: str) -> Any:
    """`cls(**values)` after type checks; its own ValueErrors get the section prefix."""
    check_types(cls, values, section)
    try:
        return cls(**values)
    except ValueError as e:
        msg = str(e)
        if not section:  # top-level fields: the message names them already
            raise ConfigError(msg) from e
        if msg.startswith(f"{section}."):
            raise ConfigError(msg) from e
        named = any(msg.startswith(f.name) for f in dataclasses.fields(cls))
        raise ConfigError(f"{section}.{msg}" if named else f"{section}: {msg}") from e


def require(ok: bool, field: str, value: Any, rule: str) -> None:
    """Raises ConfigError("field=value rule") unless ok."""
    if not ok:
        raise ConfigError(f"{field}={value!r} {rule}")


def positive_int(field: str, value: Any) -> None:
    require(is_int(value) and value >= 1, field, value, "must be a positive integer.")


def non_negative(field: str, value: Any, integer: bool = False) -> None:
    kind = is_int(value) if integer else is_number(value) and math.isfinite(value)
    require(kind and value >= 0, field, value,
            f"must be a non-negative {'integer' if integer else 'number'}.")


def check_coordinator(address: str, process_id: int) -> None:
    """A multi-host coordinator address must be host:port with a host that resolves.

    Cheap checks only: a peer that is merely slow to start is the coordination service's
    business (it waits up to distributed.init_timeout_s, then fails naming the address).
    """
    field = "distributed.coordinator_address"
    host, _, port = address.rpartition(":")
    require(bool(host) and port.isdigit() and 0 < int(port) < 65536, field, address,
            "must be host:port with a port in 1..65535.")
    try:
        socket.getaddrinfo(host.strip("[]"), int(port))
    except (socket.gaierror, UnicodeError) as e:
        raise ConfigError(f"{field}={address!r}: host {host!r} does not resolve ({e}); give "
                          f"the address of process 0 that every process can reach.") from None
    if process_id == 0:  # process 0 hosts the coordinator: its port must be free
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("", int(port)))
            except OSError as e:
                raise ConfigError(f"{field}={address!r}: process 0 cannot listen on port "
                                  f"{port} ({e.strerror}); pick a free port.") from None


def check_writable_dir(field: str, path: str) -> None:
    """The directory exists and is writable, or can be created (its nearest existing parent
    is a writable directory). Creates nothing."""
    path = os.path.abspath(os.path.expanduser(path))
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise ConfigError(f"{field}={path!r}: {probe!r} exists and is not a directory.")
    try:  # a real probe: os.access says yes to root even on read-only or virtual filesystems
        tempfile.TemporaryDirectory(dir=probe, prefix=".write-probe-").cleanup()
    except OSError as e:
        where = "" if probe == path else f" (its nearest existing parent {probe!r} is not)"
        raise ConfigError(f"{field}={path!r} is not writable{where}: {e.strerror or e}; pass "
                          f"--config.{field}=<a writable dir>.") from None
