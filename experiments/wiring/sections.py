"""A whole experiment config read into typed sections, every rule checked once, up front.

`read(config)` is the one place a ConfigDict is checked: it builds each section's dataclass
(experiments/wiring/schema.py; each dataclass checks its own fields), then the rules that span
sections (the agent's `checks`, device ids, the resume path), and raises ConfigError (a
ValueError) naming the field, the bad value and what is allowed. It builds no env, starts no
thread and compiles nothing (docs/robustness.md). Everything after it (the network and agent
builders, the runtime) gets typed sections, not the ConfigDict.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

import ml_collections

import agents
from agents import evaluation as eval_players
from networks import NetworkConfig
from sebulba import checkpoint, distributed, envs, layout, topology, validation
from sebulba.runtime_config import RuntimeConfig, validate_runtime_config
from sebulba.validation import ConfigError
from experiments.wiring.schema import (RunConfig, WandbConfig, require_section,
                                       section_values)

RUNTIMES = ("sebulba", "anakin")


@dataclasses.dataclass(frozen=True)
class Sections:
    """A checked experiment config, one typed value per section (schema.py's table)."""

    runtime: RuntimeConfig             # with an auto (0) num_actor_threads resolved
    run: RunConfig
    distributed: distributed.DistributedConfig
    wandb: WandbConfig
    env: envs.EnvConfig
    network: NetworkConfig
    agent: Any                         # an instance of spec.config_cls
    spec: agents.AgentSpec             # the agent's name, builder, config class and checks

    @property
    def joins_a_job(self) -> bool:
        """Whether this process will join a multi-host job (then devices are queried only
        after joining)."""
        dc = self.distributed
        return dc.mode == "on" or dc.num_processes > 1 or (
            dc.mode == "auto" and distributed._under_slurm())


def agent_spec(config: ml_collections.ConfigDict,
               agent: str | agents.AgentSpec | None = None) -> agents.AgentSpec:
    """The agent to build: `agent` (a spec, or a registered name: an entry point's own), else
    `config.agent_name`. A config naming another agent than the entry point's fails."""
    name = config.get("agent_name", "") or ""
    if isinstance(agent, agents.AgentSpec):
        return agent
    if agent and name and name != agent:
        raise ConfigError(f"agent_name={name!r}, but this entry point trains {agent!r}; use "
                          f"experiments/train.py for any registered agent.")
    chosen = agent or name
    if not chosen:
        raise ConfigError(f"agent_name={name!r}: the config names no agent; set "
                          f"config.agent_name to one of {list(agents.registered_agents())}.")
    try:
        return agents.get_agent(chosen)
    except ValueError as e:
        raise ConfigError(f"agent_name={chosen!r}: {e}") from None


def read(config: ml_collections.ConfigDict, *, agent: str | agents.AgentSpec | None = None,
         devices: bool = True, env_id: bool = True) -> Sections:
    """`config` as typed, checked sections (the module docstring).

    `agent`: the entry point's agent (a name or a spec) when the config's `agent_name` is
    empty. `devices`: also check device ids against this host's devices, unless the run joins
    a multi-host job (devices may not be queried before joining; the run checks them right
    after). `env_id`: check that env.name is an EnvPool id, a registered env or
    "gymnasium:<id>" (off for a user env factory, or the Anakin runtime).
    """
    spec = agent_spec(config, agent)
    dc = validation.build(distributed.DistributedConfig,
                          section_values(distributed.DistributedConfig,
                                         config.get("distributed", {"mode": "off"})),
                          "distributed")
    if dc.mode != "off" and dc.num_processes > 1:
        validation.check_coordinator(dc.coordinator_address, dc.process_id)
    rc = validation.build(RuntimeConfig, section_values(RuntimeConfig, config, False), "")
    validate_runtime_config(rc, num_processes=dc.num_processes)
    if rc.num_actor_threads == 0:  # auto: the checks below see the layout that will run
        rc = dataclasses.replace(rc, num_actor_threads=layout.choose(
            0, 1, len(rc.actor_device_ids)).actor_threads)
    run = validation.build(RunConfig, section_values(RunConfig, config, False), "")
    validation.one_of("runtime", run.runtime, RUNTIMES, "a runtime")
    validation.one_of("eval_policy", run.eval_policy, eval_players.EVAL_POLICIES,
                      "an evaluation policy")
    wandb = validation.build(WandbConfig, section_values(WandbConfig, config.get("wandb", {})),
                             "wandb")
    ec = validation.build(envs.EnvConfig, section_values(envs.EnvConfig,
                                                         require_section(config, "env")), "env")
    if env_id:
        try:
            envs.check_env_id(ec.name)
        except ValueError as e:
            raise ConfigError(f"env.name={ec.name!r}: {e}") from None
    net = validation.build(NetworkConfig, section_values(NetworkConfig,
                                                         require_section(config, "network")),
                           "network")
    agent_cfg = validation.build(spec.config_cls,
                                 section_values(spec.config_cls, require_section(config, "agent")),
                                 "agent")
    for check in spec.checks:
        try:
            check(agent_cfg, rc, net)
        except ConfigError:
            raise
        except ValueError as e:  # an agent's own rule (e.g. PPO's minibatches): a user error
            raise ConfigError(str(e)) from e
    sections = Sections(rc, run, dc, wandb, ec, net, agent_cfg, spec)
    _check_resume(run)
    if devices and not sections.joins_a_job:
        topology.make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.num_envs)
    return sections


def _check_resume(run: RunConfig) -> None:
    run_dir = run.run_dir
    if run.resume:
        try:
            resolved = checkpoint.resolve(run.resume)
            if checkpoint.is_checkpoint_dir(os.path.abspath(os.path.expanduser(run.resume))):
                # An explicit checkpoint has no fallback: a damaged one fails here, cheaply
                # (metadata only; damaged data shows when the restore reads it).
                checkpoint.check_metadata(resolved)
        except (FileNotFoundError, checkpoint.DamagedCheckpointError) as e:
            raise ConfigError(f"resume={run.resume!r}: {e}") from None
        run_dir = run_dir or checkpoint.run_dir_of(resolved) or ""
    validation.check_writable_dir("run_dir", run_dir or "runs")


def resolve_layout(config: ml_collections.ConfigDict) -> layout.Layout | None:
    """Fills the auto (0) layout fields of `config` in place, `num_actor_threads` and
    `env.num_threads` (sebulba/layout.py), and returns the choice (None when a field is not an
    integer: `read` then names it). In place, so that everything built from the config
    afterwards (the checks, agent builders that read the batch size, config.json,
    checkpoints) sees the layout that runs."""
    threads = config.get("num_actor_threads", 1)
    env_threads = config.env.get("num_threads", 1) if "env" in config else 1
    ids = config.get("actor_device_ids", (0,))
    if not (validation.is_int(threads) and validation.is_int(env_threads)
            and threads >= 0 and env_threads >= 0 and isinstance(ids, (list, tuple))
            and len(ids) > 0):
        return None
    chosen = layout.choose(threads, env_threads, len(ids))
    config.num_actor_threads = chosen.actor_threads
    if "num_threads" in config.env:
        config.env.num_threads = chosen.env_threads
    return chosen
