"""Agents by name, so `experiments/train.py --config.agent_name=<name>` can build any of them.

An agent is registered with a builder that turns the network and the experiment's whole
ConfigDict into a `sebulba.agent.Agent` (the four pure functions the runtime calls):

    register_agent("my_agent", build, config_cls=MyConfig, checks=(my_check,))
    build(network, config, num_updates) -> sebulba.agent.Agent

`config_cls` (optional) is the agent's frozen hyperparameter dataclass: `config.agent` is
type-checked against it before anything is built. `checks` are extra config checks that raise
ValueError (e.g. PPO's minibatch divisibility). IMPALA and PPO are registered by
experiments/train.py. See docs/howto_agent.md.
"""
from __future__ import annotations

import dataclasses
import difflib
import threading
from typing import Any, Callable, Sequence

AgentBuilder = Callable[[Any, Any, int], Any]  # (network, ConfigDict, num_updates) -> Agent
ConfigCheck = Callable[[Any], None]


@dataclasses.dataclass(frozen=True)
class AgentSpec:
    name: str
    build: AgentBuilder
    config_cls: type | None = None
    checks: tuple[ConfigCheck, ...] = ()


_AGENTS: dict[str, AgentSpec] = {}
_LOCK = threading.Lock()


def register_agent(name: str, build: AgentBuilder, *, config_cls: type | None = None,
                   checks: Sequence[ConfigCheck] = (), overwrite: bool = False) -> AgentSpec:
    """Registers an agent builder under `name` (see the module docstring); returns its spec."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"agent name must be a non-empty string, got {name!r}.")
    if not callable(build):
        raise TypeError(f"agent {name!r}: build must be callable (network, config, num_updates)"
                        f" -> Agent; got {build!r}.")
    if config_cls is not None and not dataclasses.is_dataclass(config_cls):
        raise TypeError(f"agent {name!r}: config_cls must be a dataclass, got {config_cls!r}.")
    spec = AgentSpec(name, build, config_cls, tuple(checks))
    with _LOCK:
        old = _AGENTS.get(name)
        same = old is not None and (old.build is build
                                    or _qualified(old.build) == _qualified(build))
        if old is not None and not same and not overwrite:
            raise ValueError(f"agent {name!r} is already registered ({old.build!r}); pass "
                             f"overwrite=True to replace it.")
        _AGENTS[name] = spec
    return spec


def get_agent(name: str) -> AgentSpec:
    """The spec registered under `name`; a ValueError listing the registered names if none."""
    spec = _AGENTS.get(name)
    if spec is not None:
        return spec
    names = sorted(_AGENTS)
    close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise ValueError(f"unknown agent {name!r}.{hint} Registered agents: {names or 'none'} "
                     f"(IMPALA and PPO are registered by importing experiments.train; yours by "
                     f"agents.register_agent).")


def registered_agents() -> tuple[str, ...]:
    return tuple(sorted(_AGENTS))


def infer_agent(agent_fields: Sequence[str]) -> AgentSpec | None:
    """The one registered agent whose config dataclass has exactly these fields, if any (for
    configs written before `agent_name` existed)."""
    fields = set(agent_fields)
    matches = [s for s in _AGENTS.values() if s.config_cls is not None and
               {f.name for f in dataclasses.fields(s.config_cls)} == fields]
    return matches[0] if len(matches) == 1 else None


def _qualified(obj: Any) -> tuple[str, str] | object:
    """Module and name of a top-level function or class; a unique token for anything else
    (lambdas and local definitions share names, so they never count as the same)."""
    name = getattr(obj, "__qualname__", "<")
    return (obj.__module__, name) if "<" not in name else object()
