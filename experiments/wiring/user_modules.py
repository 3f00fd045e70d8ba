"""`--import MODULE`: the one implementation every entry point shares (experiments via
`experiments.wiring.cli`, scripts/evaluate.py, render.py, benchmarks/throughput.py).

A user module registers its environments, torsos or agents when imported
(`sebulba.registry.register_env`, `networks.register_torso`, `agents.register_agent`); a
command names it with `--import` (repeatable) so that the config's names resolve.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Sequence

HELP = ("a module (dotted name, or a .py file) to import first: one that registers the run's "
        "env, torso or agent; repeatable")


class ImportFailed(ValueError):
    """An --import module could not be found or imported (a user error, not a bug)."""


def import_modules(names: Sequence[str]) -> None:
    """Imports the user modules (dotted names or .py files), in order.

    Raises ImportFailed (a ValueError) naming the module when it cannot be found or its own
    imports fail.
    """
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # user modules live beside where the command runs
    for name in names:
        try:
            if name.endswith(".py"):
                if not os.path.isfile(name):
                    raise ImportError(f"no such file: {os.path.abspath(name)}")
                mod_name = os.path.splitext(os.path.basename(name))[0]
                spec = importlib.util.spec_from_file_location(mod_name, name)
                module = importlib.util.module_from_spec(spec)
                # In sys.modules before it runs, as `import` does: dataclasses (a user agent's
                # config) and pickling look their module up there.
                sys.modules.setdefault(mod_name, module)
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    if sys.modules.get(mod_name) is module:
                        del sys.modules[mod_name]
                    raise
            else:
                importlib.import_module(name)
        except ImportError as e:
            raise ImportFailed(f"--import {name!r} failed: {e}. Give a module importable from "
                             f"the current directory (e.g. examples.driving.env) or a .py "
                             f"file.") from e
