"""Agents by name: the one builder contract every agent package declares (see agents/__init__).

A spec names the agent, its frozen hyperparameter dataclass, the rules that span config
sections, and the builder:

    SPEC = AgentSpec("my_agent", build, MyConfig, checks=(my_check,))
    build(network, agent_config: MyConfig, batch: BatchShape, num_updates: int) -> Agent
    my_check(agent_config, batch: BatchShape, network_config) -> None   # raises ValueError

`batch` (podracer.batch.BatchShape) is all an agent knows of the runtime that runs it, Sebulba
or Anakin: env columns per learner device per update, T, learner devices, processes, and
whether the data is on-policy. `num_updates` is the learning-rate schedule's horizon (the
planned updates; on a resumed run a re-stretched agents.schedules.Horizon). An optional
`describe(agent_config, batch) -> str` says at start how the agent splits the batch (gradient
steps, minibatch sizes, constants derived from them), and an optional `resolve(agent_config,
batch) -> agent_config` sets the fields that depend on the batch (what `build` would set), so
that N settings can share one program (anakin/population.py).

IMPALA and PPO are built in: their specs (`agents.impala:SPEC`, `agents.ppo:SPEC`) are loaded
on first use, so nothing registers by importing an unrelated module. A user agent is added with
`register_agent` in a module the run loads with `--import`.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Sequence

from podracer.registry import Registry, same_definition

if TYPE_CHECKING:
    from podracer.agent import Agent
    from podracer.batch import BatchShape

# (network, agent_config, batch, num_updates) -> Agent. `batch` is given after the run joined
# its multi-host job, so `batch.batch_envs` counts every host; `num_updates` is the horizon of
# the learning-rate schedule (an int, or a schedules.Horizon on resume).
AgentBuilder = Callable[[Any, Any, "BatchShape", int], "Agent"]
# (agent_config, batch, network_config) -> None; raises ValueError naming the fields.
ConfigCheck = Callable[[Any, "BatchShape", Any], None]
# (agent_config, batch) -> a line on how the agent splits the batch (printed at start).
Describe = Callable[[Any, "BatchShape"], str]
# (agent_config, batch) -> the config with its batch-dependent fields set ("auto" resolved);
# `build` resolves the same way, so a resolved config builds the same agent.
Resolve = Callable[[Any, "BatchShape"], Any]


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    """How to build one agent; validated on creation, so a bad spec fails where it is written.

    Attributes:
      name: the agent's name (`config.agent_name`, the registry's key).
      build: `build(network, agent_config, batch, num_updates) -> Agent` (`AgentBuilder`).
      config_cls: the frozen dataclass of the agent's hyperparameters (`config.agent`).
      checks: rules that span config sections, `check(agent_config, batch, network_config)`,
        each raising ValueError naming the fields.
      describe: optional `describe(agent_config, batch) -> str`, printed at start.
      resolve: optional `resolve(agent_config, batch) -> agent_config` setting the fields that
        depend on the batch, so that N settings can share one program.
    """

    name: str
    build: AgentBuilder
    config_cls: type
    checks: tuple[ConfigCheck, ...] = ()
    describe: Describe | None = None
    resolve: Resolve | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"agent name must be a non-empty string, got {self.name!r}.")
        if not callable(self.build):
            raise TypeError(f"agent {self.name!r}: build must be callable (network, "
                            f"agent_config, batch, num_updates) -> Agent; got {self.build!r}.")
        if not (isinstance(self.config_cls, type) and dataclasses.is_dataclass(self.config_cls)):
            raise TypeError(f"agent {self.name!r}: config_cls must be a dataclass (the agent's "
                            f"hyperparameters), got {self.config_cls!r}.")
        checks = tuple(self.checks)
        bad = [c for c in checks if not callable(c)]
        if bad:
            raise TypeError(f"agent {self.name!r}: checks must be callables (agent_config, "
                            f"batch, network_config) -> None; got {bad!r}.")
        for name in ("describe", "resolve"):
            f = getattr(self, name)
            if f is not None and not callable(f):
                raise TypeError(f"agent {self.name!r}: {name} must be callable (agent_config, "
                                f"batch); got {f!r}.")
        object.__setattr__(self, "checks", checks)  # any sequence in, a hashable tuple kept


def _check_spec(name: str, spec: Any) -> None:
    if not isinstance(spec, AgentSpec):
        raise TypeError(f"agent {name!r} must be registered as an agents.AgentSpec, got "
                        f"{spec!r}.")
    if spec.name != name:
        raise ValueError(f"agent spec {spec.name!r} registered under another name ({name!r}).")


AGENTS: Registry[AgentSpec] = Registry(
    "agent", lazy={"impala": "agents.impala:SPEC", "ppo": "agents.ppo:SPEC"},
    how="agents.register_agent; load the module that registers yours with --import",
    check=_check_spec)


def register_agent(name: str, build: AgentBuilder, *, config_cls: type,
                   checks: Sequence[ConfigCheck] = (), describe: Describe | None = None,
                   resolve: Resolve | None = None, overwrite: bool = False) -> AgentSpec:
    """Registers an agent under `name` (see the module docstring) and returns its spec.
    Registering a name again needs overwrite=True, unless it is the same spec again (its module
    imported twice, or reloaded); the built-in names cannot be replaced."""
    spec = AgentSpec(name, build, config_cls, tuple(checks), describe, resolve)
    old = AGENTS.find(name)
    if old is not None and _same_spec(old, spec):
        return old
    return AGENTS.register(name, spec, overwrite=overwrite)


def get_agent(name: str) -> AgentSpec:
    """The spec registered under `name`; a ValueError naming the close matches and every
    registered agent if none."""
    return AGENTS.get(name)


def registered_agents() -> tuple[str, ...]:
    """Every agent name, the built-ins included (sorted)."""
    return tuple(AGENTS.names())


def _same_spec(a: AgentSpec, b: AgentSpec) -> bool:
    """Same builder, config class, checks and describe (by module and name: a reloaded module
    makes new objects)."""
    pairs = [(a.build, b.build), (a.config_cls, b.config_cls)] + list(zip(a.checks, b.checks))
    for x, y in ((a.describe, b.describe), (a.resolve, b.resolve)):
        if (x is None) != (y is None):
            return False
        if x is not None:
            pairs.append((x, y))
    return len(a.checks) == len(b.checks) and all(same_definition(x, y) for x, y in pairs)
