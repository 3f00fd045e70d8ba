"""Config -> network -> agent: the one way every entry point builds them.

The experiments, scripts/evaluate.py and render.py, the benchmark and the tests all build
through `build_from_config` (or its two halves), so a network or an agent is assembled the
same way everywhere. The agent's builder has one contract (agents/builders.py):
`spec.build(network, agent_config, batch, num_updates)`, `batch` the runtime's BatchShape.
"""
from __future__ import annotations

from typing import Any

import ml_collections

import networks
from networks import encoders
from agents import schedules
from experiments.wiring.sections import Sections, read
from podracer.agent import Agent
from podracer.batch import BatchShape
from podracer.validation import ConfigError


def build_network(sections: Sections, action_space, observation_space=None) -> Any:
    """The actor-critic `sections.network` describes, with the policy head for
    `action_space` (and, for the auto torso, embeddings of `observation_space`'s Discrete
    leaves); an action space no head supports fails naming the env."""
    try:
        return networks.build_network(sections.network, action_space, observation_space,
                                      sections.env.action_mask_key,
                                      sections.env.action_mask_empty == "allow")
    except ValueError as e:
        if str(e).startswith("action_mask_key="):
            raise ConfigError(f"env.{e} (env.name={sections.env.name!r})") from None
        raise ValueError(f"{sections.env.name}: {e}") from None


def describe_torso(sections: Sections, network, example_obs) -> str | None:
    """For the `auto` torso, the start-up line of which encoder each leaf of a dict/tuple
    observation got (None for one array, whose torso is what the config's other lines say),
    after tracing the torso on `example_obs` (a batch); a ConfigError names a
    `network.encoders` key that is no leaf, or a leaf its encoder cannot take. None for other
    torsos."""
    if sections.network.torso != "auto":
        return None
    try:
        lines = encoders.describe(network.torso, example_obs)
    except ValueError as e:
        raise ConfigError(f"network.{e}" if str(e).startswith("encoders") else
                          f"network.torso='auto' on {sections.env.name}: {e}") from None
    return None if encoders.is_plain(example_obs) else "encoders: " + "; ".join(lines)


def describe_mask(network) -> str | None:
    """The start-up line naming the observation entry that masks the policy, or None."""
    key = getattr(network, "action_mask_key", "")
    if not key:
        return None
    seen = "the torso sees it too" if network.torso_sees_mask else "the torso does not see it"
    return (f"action mask: observation entry {key!r} (1 = legal) masks the policy, which "
            f"samples and plays legal actions only; {seen}")


def build_agent(sections: Sections, network, num_updates: int | None = None,
                shape: BatchShape | None = None) -> Agent:
    """The agent `sections.spec` names, for `network` and the batch `shape` (default: the one
    read with the config; a run passes the one its runtime gives after joining, which counts
    every process). `num_updates` is the learning-rate schedule's horizon, an int or an
    agents.schedules.Horizon (default: the updates a fresh run of this config makes)."""
    shape = shape or sections.shape
    if num_updates is None:
        num_updates = shape.plan(sections.runtime.total_env_steps).num_updates
    # A resumed run's Horizon carries where its decay begins: keep it whole.
    horizon = (num_updates if isinstance(num_updates, schedules.Horizon)
               else schedules.Horizon(num_updates))
    return sections.spec.build(network, sections.agent, shape, horizon)


def build_from_config(config: ml_collections.ConfigDict | Sections, action_space, *,
                      agent: str | None = None, num_updates: int | None = None,
                      observation_space=None) -> tuple[Sections, Any, Agent]:
    """(sections, network, agent) for a ConfigDict (read and checked here, devices not
    queried) or already-read Sections; `observation_space` as for `build_network` (pass the
    env's, as a run does, to rebuild a run's network)."""
    sections = config if isinstance(config, Sections) else read(config, agent=agent,
                                                                devices=False, env_id=False)
    network = build_network(sections, action_space, observation_space)
    return sections, network, build_agent(sections, network, num_updates)


__all__ = ["ConfigError", "build_agent", "build_from_config", "build_network",
           "describe_mask", "describe_torso"]
