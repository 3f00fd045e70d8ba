"""The wiring: an experiment config -> checked sections -> network -> agent -> a runtime's run.

It lives above the runtimes: `sebulba/` and `anakin/` import neither `agents` nor `networks`;
this package is where the three meet (docs/architecture.md).

- schema.py: one dataclass per config section and the ml_collections defaults made from them;
- sections.py: `read(config)`, every rule checked once, before anything is built;
- build.py: `build_network`, `build_agent`, `build_from_config` (every entry point, script and
  test builds through these);
- run.py / anakin.py: a whole run on the Sebulba / Anakin runtime; session.py: what both
  share (restore, run dir, logger, checkpointer, summary);
- evaluation.py: the periodic evaluation hook.
"""
from __future__ import annotations

from typing import Any, Callable

import ml_collections

from experiments.wiring.build import build_agent, build_from_config, build_network
from experiments.wiring.run import run
from experiments.wiring.session import exit_on_lost_peer, make_run_dir
from experiments.wiring.schema import RunConfig, WandbConfig, config_dict
from experiments.wiring.sections import RUNTIMES, Sections, agent_spec, read, resolve_layout


def cli(run_fn: Callable[[ml_collections.ConfigDict], Any], default_config: str) -> None:
    """Command-line entry: `--config=file.py[:variant]` plus `--config.x=y` overrides.

    Also `--import MODULE` (repeatable; user modules that register envs, torsos, agents) and
    `--verbose`. A user error (config, checkpoint, --import) prints one message and exits 2;
    `--verbose` or SEBULBA_VERBOSE=1 shows its traceback (sebulba/command_line.py).

    The flags are defined here, when a script runs, not at import: several experiment modules
    can then be imported side by side (tests, sweeps) without clashing absl flags.
    """
    from sebulba import command_line
    command_line.run(run_fn, default_config)


__all__ = ["RUNTIMES", "RunConfig", "Sections", "WandbConfig", "agent_spec", "build_agent",
           "build_from_config", "build_network", "cli", "config_dict", "exit_on_lost_peer",
           "make_run_dir", "read", "resolve_layout", "run"]
