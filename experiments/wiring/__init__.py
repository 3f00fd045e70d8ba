"""The wiring: an experiment config -> checked sections -> network -> agent -> a runtime's run.

It lives above the runtimes: `sebulba/` and `anakin/` import neither `agents` nor `networks`
nor each other; this package is where they meet (docs/architecture.md).

- sections.py: `read(config)`, every section read (podracer.schema) and every rule checked
  once, before anything is built; run_config.py: the run section (`RunConfig`);
- drivers/: the runtimes' drivers, peers over one protocol (drivers/protocol.py: what a
  driver gives a run; drivers/sebulba.py, drivers/anakin.py); jax_envs.py: a JAX-native env
  for either;
- build.py: `build_network`, `build_agent`, `build_from_config` (every entry point, script and
  test builds through these);
- run.py: a whole run, one sequence for both runtimes; session.py: the run dir, the agent
  built once and restored; run_files.py: the logger, checkpointer, config.json, summary.json;
  exits.py: the exits after Ctrl-C and a lost peer; evaluation.py: the periodic evaluation;
- command_line.py, user_modules.py: `--config`, `--import` and the one-line user errors.
"""
from __future__ import annotations

from typing import Any, Callable

import ml_collections

from experiments.wiring.build import build_agent, build_from_config, build_network
from experiments.wiring.run import run
from experiments.wiring.run_config import RUNTIMES, RunConfig
from experiments.wiring.drivers.sebulba import host_envs, is_jax_env
from experiments.wiring.sections import DRIVERS, Sections, agent_spec, read
from experiments.wiring.exits import exit_on_lost_peer
from experiments.wiring.session import make_run_dir


def cli(run_fn: Callable[[ml_collections.ConfigDict], Any], default_config: str) -> None:
    """Command-line entry: `--config=file.py[:variant]` plus `--config.x=y` overrides.

    Also `--import MODULE` (repeatable; user modules that register envs, torsos, agents) and
    `--verbose`. A user error (config, checkpoint, --import) prints one message and exits 2;
    `--verbose` or SEBULBA_VERBOSE=1 shows its traceback (experiments/wiring/command_line.py).

    The flags are defined here, when a script runs, not at import: several experiment modules
    can then be imported side by side (tests, sweeps) without clashing absl flags.
    """
    from experiments.wiring import command_line
    command_line.run(run_fn, default_config)


__all__ = ["DRIVERS", "RUNTIMES", "RunConfig", "Sections", "agent_spec", "build_agent",
           "build_from_config", "build_network", "cli", "exit_on_lost_peer", "host_envs",
           "is_jax_env", "make_run_dir", "read", "run"]
