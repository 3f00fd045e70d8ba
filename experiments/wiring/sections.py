"""A whole experiment config read into typed sections, every rule checked once, up front.

`read(config)` is the one place a ConfigDict is read and checked: each section into its
dataclass (each checks its own fields), the runtime's layout resolved, then the rules that span
sections and the checks against the world (devices, env name, resume path, run dir,
coordinator); a bad value raises ConfigError naming the field, the value and what is allowed.
It builds no env, starts no thread and compiles nothing, and leaves the ConfigDict as it was:
the run reads only the `Sections`, whose `config` (the config with what the runtime resolved,
frozen) is what config.json, checkpoint metadata and the logger record. Which section lives
where: docs/architecture.md, "Config sections and their schemas".
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import ml_collections

import agents
from experiments.wiring.drivers import anakin as anakin_driver
from experiments.wiring.drivers import protocol
from experiments.wiring.drivers import sebulba as sebulba_driver
from experiments.wiring.run_config import RunConfig, evaluation_env
from networks import NetworkConfig
from podracer import checkpoint, distributed, validation
from podracer.batch import BatchShape
from podracer.env_config import EnvSection
from podracer.logging import WandbConfig
from podracer.schema import read_section, require_section
from podracer.validation import ConfigError

# config.runtime -> the runtime's driver (RunConfig.runtime names one of these).
DRIVERS: dict[str, protocol.Driver] = {"sebulba": sebulba_driver.DRIVER,
                                        "anakin": anakin_driver.DRIVER}


@dataclasses.dataclass(frozen=True)
class Sections:
    """A checked experiment config, one typed value per section (the module's table)."""

    runtime: Any                       # RuntimeConfig (layout resolved) or AnakinConfig
    run: RunConfig
    distributed: distributed.DistributedConfig
    wandb: WandbConfig
    env: EnvSection                    # the runtime's reading: Sebulba's EnvConfig, or the
                                       # fields every runtime reads (Anakin)
    network: NetworkConfig
    agent: Any                         # an instance of spec.config_cls
    spec: agents.AgentSpec             # the agent's name, builder, config class and checks
    shape: BatchShape                  # the batch the agent is built for (processes as
                                       # configured; a run re-reads it after joining)
    config: ml_collections.FrozenConfigDict
                                       # the config as it runs: the one read, with the
                                       # fields the runtime resolved (its auto layout);
                                       # config.json and checkpoint metadata hold it
    layout: Any = None                 # Sebulba: the resolved layout (sebulba.layout.Layout)
    members: Any = None                # Anakin: several agents in one program
                                       # (experiments/wiring/members.py), or None

    def recorded(self) -> dict:
        """`config` as plain JSON values: what config.json, checkpoint metadata and the resume
        checks hold."""
        return json.loads(self.config.to_json())

    @property
    def driver(self) -> protocol.Driver:
        """The runtime this config runs on (experiments/wiring/drivers/)."""
        return DRIVERS[self.run.runtime]

    @property
    def joins_a_job(self) -> bool:
        """Whether this process will join a multi-host job (then devices are queried only
        after joining)."""
        return distributed.joins_a_job(self.distributed)


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

    Args:
      config: the experiment's ConfigDict, left unchanged. An auto Sebulba layout is resolved
        here; `Sections.config` records it, so that config.json and checkpoints hold the
        layout that runs.
      agent: the entry point's agent (a name or a spec), used when `config.agent_name` is empty.
      devices: also check device ids against this host's devices, unless the run joins a
        multi-host job (devices may not be queried before joining; a run checks them right
        after, when it builds its devices).
      env_id: check that the runtime knows `env.name` (off for a user env factory).

    Returns:
      The `Sections`: one typed, checked dataclass per section, the agent's spec and the
      runtime's driver.

    Raises:
      ConfigError: naming the field, the bad value and what is allowed.
    """
    spec = agent_spec(config, agent)
    run = read_section(RunConfig, config, "", whole=False)
    dc = read_section(distributed.DistributedConfig,
                      config.get("distributed", {"mode": "off"}), "distributed")
    wandb = read_section(WandbConfig, config.get("wandb", {}), "wandb")
    driver = DRIVERS[run.runtime]
    read_runtime = driver.read(config)  # its own section and its own reading of the env
    rt, env = read_runtime.section, read_runtime.env
    net = read_section(NetworkConfig, require_section(config, "network"), "network")
    agent_cfg = read_section(spec.config_cls, require_section(config, "agent"), "agent")
    try:
        shape = rt.batch_shape(dc.num_processes)
        rt.plan(dc.num_processes)  # int32 update counters
    except ValueError as e:
        raise ConfigError(str(e)) from None
    for check in spec.checks:
        try:
            check(agent_cfg, shape, net)
        except ConfigError:
            raise
        except ValueError as e:  # an agent's own rule (e.g. PPO's minibatches): a user error
            raise ConfigError(str(e)) from e
    population = driver.read_members(config, rt, agent_cfg, run)
    sections = Sections(rt, run, dc, wandb, env, net, agent_cfg, spec, shape,
                        as_run(config, read_runtime.resolved), read_runtime.layout, population)
    # The checks against the world, each asked of its owner.
    if dc.num_processes > 1 and sections.joins_a_job:
        validation.check_coordinator(dc.coordinator_address, dc.process_id)
    if env_id:
        driver.check_env(env, sections.joins_a_job)
        if run.eval_randomize:
            try:
                driver.check_env(evaluation_env(env, run), sections.joins_a_job)
            except ConfigError as e:
                raise ConfigError(f"eval_randomize={run.eval_randomize!r}: {e}") from None
    _check_resume(run)
    if devices and not sections.joins_a_job:
        driver.check_devices(rt)
    return sections


def as_run(config: ml_collections.ConfigDict,
           resolved: dict[str, Any]) -> ml_collections.FrozenConfigDict:
    """A frozen copy of `config` (references resolved) with each dotted field of `resolved`
    set to the value that runs."""
    out = config.copy_and_resolve_references()
    with out.unlocked():
        for dotted, value in resolved.items():
            *parents, leaf = dotted.split(".")
            section = out
            for name in parents:
                section = section[name]
            section[leaf] = value
    return ml_collections.FrozenConfigDict(out)


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
