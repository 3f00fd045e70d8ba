"""Things by name: the one registry helper of every registry (envs of either runtime, torsos,
agents).

`Registry(kind)` maps names to objects with the rules every registry here shares: a name is a
non-empty string; registering a name twice needs `overwrite=True` unless it is the same object
again (a module imported twice, importlib.reload), and built-in names cannot be replaced;
`get` of an unknown name raises a ValueError that lists the registered names and the close
matches. Built-ins can be named lazily (`lazy={"ppo": "agents.ppo:SPEC"}`): loaded on first
use, so nothing registers by importing an unrelated module.
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
