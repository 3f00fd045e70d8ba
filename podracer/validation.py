"""The rules a config is checked with, and the error every check raises (`ConfigError`).

Every mistake we can see is reported before any thread starts, any environment is built or
anything compiles, with a message that names the field, the bad value and what is allowed.
A section's own rules live in its dataclass's `__post_init__` (read by podracer/schema.py); the
helpers here are what those rules and the checks against the world (a writable run dir, a
reachable coordinator) are written with. Nothing here touches JAX devices: a multi-host run
must join `jax.distributed` before the first device query.
"""
from __future__ import annotations

import difflib
import math
import os
import socket
import tempfile
from collections.abc import Sequence
from typing import Any

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
