"""Things by name: one registry helper for envs, torsos and agents (and Anakin's envs).

`Registry(kind)` maps names to objects with the rules every registry here shares: a name is a
non-empty string; registering a name twice needs `overwrite=True` unless it is the same object
again (a module imported twice, importlib.reload), and built-in names cannot be replaced;
`get` of an unknown name raises a ValueError that lists the registered names and the close
matches. Built-ins can be named lazily (`lazy={"ppo": "agents.ppo:SPEC"}`): loaded on first
use, so nothing registers by importing an unrelated module.

This module also holds the runtime's user-env registry: `register_env("my-env", maker)`, then
`--config.env.name=my-env`. `sebulba.envs.make_env` and `check_env_id` consult it before
EnvPool, so a user script registers its environment once (at import) and every experiment
main, the evaluation scripts and the config validation find it. A maker is

    maker(num_envs: int, seed: int, env_config: sebulba.envs.EnvConfig) -> env batch

where the env batch has the runtime's API (sebulba/envs.py), or is a gymnasium VectorEnv
(autoreset NEXT_STEP) or a list of dm_env environments, which sebulba/adapters.py wraps. Env i of
the batch should be seeded with seed + i. `env_config.options` carries the user's own settings
(`config.env.options` in the experiment config). Names with the prefix "gymnasium:" need no
registration: "gymnasium:LunarLander-v3" runs the gymnasium-registered id through
sebulba.adapters.gymnasium_make.
"""
from __future__ import annotations

import difflib
import importlib
import threading
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> objects of one kind (see the module docstring). Reads like a read-only
    mapping (`name in r`, `r[name]`, `sorted(r)`); writes go through `register`."""

    def __init__(self, kind: str, builtins: Mapping[str, T] | None = None, *,
                 lazy: Mapping[str, str] | None = None, how: str = "",
                 check: Callable[[str, Any], None] | None = None) -> None:
        """`kind` names the things in messages ("env", "torso", "agent"); `builtins` and
        `lazy` ("module:attribute", imported on first use) cannot be replaced; `how` says in
        the unknown-name error how a user adds one; `check(name, obj)` validates a
        registration (raises TypeError/ValueError)."""
        self.kind, self._how, self._check = kind, how, check
        self._items: dict[str, T] = dict(builtins or {})
        self._lazy = dict(lazy or {})
        self._builtin = frozenset(self._items) | frozenset(self._lazy)
        self._lock = threading.Lock()

    def register(self, name: str, obj: T, *, overwrite: bool = False) -> T:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}.")
        if self._check is not None:
            self._check(name, obj)
        with self._lock:
            old = self._items.get(name)
            if name in self._lazy and old is None:
                old = self._load(name)
            same = old is not None and same_definition(old, obj)
            if old is not None and not same:
                if name in self._builtin:
                    raise ValueError(f"{self.kind} {name!r} is built in ({old!r}) and cannot "
                                     f"be replaced; register yours under another name.")
                if not overwrite:
                    raise ValueError(f"{self.kind} {name!r} is already registered ({old!r}); "
                                     f"pass overwrite=True to replace it.")
            self._items[name] = obj
        return obj

    def unregister(self, name: str) -> None:
        """Removes a registered (not built-in) name (tests); unknown names are ignored."""
        with self._lock:
            if name not in self._builtin:
                self._items.pop(name, None)

    def find(self, name: str) -> T | None:
        """The object registered under `name`, or None."""
        if name in self._items:
            return self._items[name]
        if name in self._lazy:
            with self._lock:
                return self._load(name)
        return None

    def get(self, name: str) -> T:
        """The object registered under `name`; a ValueError listing the names if none."""
        obj = self.find(name)
        if obj is None:
            raise ValueError(self.unknown(name))
        return obj

    def unknown(self, name: Any) -> str:
        """The message for an unknown name: close matches, every name, how to add one."""
        names = self.names()
        close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        how = f" ({self._how})" if self._how else ""
        return (f"unknown {self.kind} {name!r}.{hint} Registered {self.kind}s: "
                f"{', '.join(names) or 'none'}{how}.")

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._lazy

    def __getitem__(self, name: str) -> T:
        obj = self.find(name)
        if obj is None:
            raise KeyError(name)
        return obj

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def _load(self, name: str) -> T:
        module, _, attr = self._lazy[name].partition(":")
        obj = getattr(importlib.import_module(module), attr)
        self._items[name] = obj
        return obj


def same_definition(a: Any, b: Any) -> bool:
    """The same object, or the same top-level function or class by module and name (a module
    imported twice, or reloaded, makes new objects). Lambdas and local definitions share
    names, so they never count as the same."""
    return a is b or (_qualified(a) is not None and _qualified(a) == _qualified(b))


def _qualified(obj: Any) -> tuple[str, str] | None:
    name = getattr(obj, "__qualname__", "<")
    return None if "<" in name else (getattr(obj, "__module__", ""), name)


# ---- The runtime's user environments ------------------------------------------------------

EnvMaker = Callable[[int, int, Any], Any]
GYMNASIUM_PREFIX = "gymnasium:"


def _check_env(name: str, maker: Any) -> None:
    if name.startswith(GYMNASIUM_PREFIX):
        raise ValueError(f"env name {name!r} must not start with {GYMNASIUM_PREFIX!r} (those "
                         f"names need no registration).")
    if not callable(maker):
        raise TypeError(f"maker for {name!r} must be callable (num_envs, seed, env_config) -> "
                        f"env batch; got {maker!r}.")


ENVS: Registry[EnvMaker] = Registry(
    "env", how="sebulba.registry.register_env; load the module that registers yours with "
    "--import", check=_check_env)


def register_env(name: str, maker: EnvMaker, *, overwrite: bool = False) -> None:
    """Registers `maker` under `name`; re-registering a name needs overwrite=True (a second
    module silently replacing an env would train on the wrong one)."""
    ENVS.register(name, maker, overwrite=overwrite)


def unregister_env(name: str) -> None:
    """Removes a registered env (tests); unknown names are ignored."""
    ENVS.unregister(name)


def env_maker(name: str) -> EnvMaker | None:
    """The maker registered under `name`, or None."""
    return ENVS.find(name)


def registered_envs() -> tuple[str, ...]:
    return tuple(ENVS.names())
