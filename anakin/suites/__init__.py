"""JAX-native env suites beyond gymnax, each behind a name prefix ("brax:ant",
"jumanji:Snake-v1", ...) and an optional install extra.

One adapter module per suite (`anakin/suites/<suite>.py`) turns the suite's own step and reset
into a `RawEnv` (anakin/envs.py: reset and transition without auto-reset; termination and
time-limit truncation reported apart; gymnasium spaces), so `AutoReset` gives every suite the
same episode semantics as EnvPool and gymnax. An adapter module is imported only when a name
with its prefix is made: the base install never imports a suite, and a missing one is one line
naming what to install.

`SUITES` lists them (prefix -> `Suite`); docs/anakin.md has the table of suites, the names
tried, their speed and what each learning check reached.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from typing import Any


@dataclasses.dataclass(frozen=True)
class Suite:
    """A suite of JAX-native envs named "<prefix>:<id>"."""

    prefix: str        # the name's prefix, without the colon
    module: str        # the adapter: anakin.suites.<module>.make(env_id, options) -> RawEnv
    packages: tuple[str, ...]  # the top-level modules the adapter imports (checked first)
    extra: str         # the install extra: requirements-<extra>.txt / pip install -e .[<extra>]
    examples: tuple[str, ...]  # ids tried here (docs/anakin.md), for messages

    def install_hint(self) -> str:
        return (f"pip install -r requirements-{self.extra}.txt (or pip install -e "
                f"'.[{self.extra}]')")


SUITES: dict[str, Suite] = {s.prefix: s for s in (
    Suite("brax", "brax_suite", ("brax", "mujoco"), "brax",
          ("ant", "halfcheetah", "hopper", "inverted_pendulum")),
    Suite("jumanji", "jumanji_suite", ("jumanji",), "jumanji", ("Snake-v1", "Game2048-v1")),
    Suite("craftax", "craftax_suite", ("craftax",), "craftax",
          ("Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1")),
    Suite("navix", "navix_suite", ("navix",), "navix", ("Navix-Empty-8x8-v0",)),
    Suite("xminigrid", "xminigrid_suite", ("xminigrid",), "xminigrid", ("MiniGrid-Empty-8x8",)),
    Suite("pgx", "pgx_suite", ("pgx",), "pgx", ("2048", "tic_tac_toe")),
)}


def strong_types(tree: Any) -> Any:
    """`tree` with its weakly typed leaves (Python-scalar constants in a suite's code) made
    strong: the runtime's first state is strongly typed, so a weak leaf coming back from a step
    would change the compiled update's input types and compile it a second time."""
    import jax

    def strong(x):
        return jax.lax.convert_element_type(x, x.dtype) if jax.typeof(x).weak_type else x
    return jax.tree.map(strong, tree)


def refuse_unknown_options(name: str, options: dict, allowed, shown=None) -> None:
    """Raises ValueError naming the options of `name` ("<suite>:<id>") that are not in
    `allowed`, and what is (`shown`, default `allowed`, in its order): every adapter's check."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {unknown}; allowed: "
                         f"{', '.join(shown if shown is not None else allowed)}.")


def split_name(name: str) -> tuple[Suite, str] | None:
    """(suite, id) for "<prefix>:<id>" of a known suite, else None. Imports nothing."""
    prefix, sep, env_id = name.partition(":")
    if not sep or prefix not in SUITES:
        return None
    return SUITES[prefix], env_id


def make_raw(name: str, options: dict | None = None) -> Any:
    """The `RawEnv` for a suite's name; ValueError with one line for a missing extra or an
    empty id (the adapter itself names the ids it knows for an unknown one)."""
    found = split_name(name)
    if found is None:
        raise ValueError(f"{name!r} names no JAX env suite; prefixes: "
                         f"{', '.join(p + ':' for p in SUITES)}.")
    suite, env_id = found
    if not env_id:
        raise ValueError(f"{name!r}: no env id after '{suite.prefix}:'; e.g. "
                         f"{', '.join(suite.prefix + ':' + e for e in suite.examples)}.")
    missing = [m for m in suite.packages if importlib.util.find_spec(m) is None]
    if missing:
        raise ValueError(f"env {name!r} needs the {suite.extra} extra ({', '.join(missing)} "
                         f"not installed): {suite.install_hint()}.")
    adapter = importlib.import_module(f"anakin.suites.{suite.module}")
    return adapter.make(env_id, dict(options or {}))
