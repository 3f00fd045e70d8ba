"""Glue from an experiment's ConfigDict to a training run; algorithm-agnostic.

An experiment script passes its config and a `make_agent(network, agent_config, num_updates)`
builder; this module builds the envs, network, run directory, logger and checkpointer, restores
a checkpoint for `config.resume`, and calls `train`. See docs/checkpoints.md.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
from typing import Any, Callable

import jax
import ml_collections

import networks
from sebulba import checkpoint, distributed, envs
from sebulba.agent import Agent
from sebulba.logging import MetricsLogger
from sebulba.runner import RuntimeConfig, TrainResult, train

AgentBuilder = Callable[[Any, ml_collections.ConfigDict, int], Agent]


def runtime_config(config: ml_collections.ConfigDict) -> RuntimeConfig:
    fields = {f.name for f in dataclasses.fields(RuntimeConfig)}
    values = {k: config[k] for k in fields if k in config}
    for k in ("actor_device_ids", "learner_device_ids"):
        if k in values:
            values[k] = tuple(values[k])
    return RuntimeConfig(**values)


def distributed_config(config: ml_collections.ConfigDict) -> distributed.DistributedConfig:
    if "distributed" not in config:
        return distributed.DistributedConfig(mode="off")
    values = config.distributed.to_dict()
    if values.get("local_device_ids") is not None:
        values["local_device_ids"] = tuple(values["local_device_ids"])
    return distributed.DistributedConfig(**values)


def env_config(config: ml_collections.ConfigDict) -> envs.EnvConfig:
    return envs.EnvConfig(**config.env.to_dict())


def make_network(config: ml_collections.ConfigDict, action_space) -> Any:
    """ActorCritic with the configured torso, sized for a discrete action space."""
    net = config.network
    kwargs: dict[str, Any] = {}
    if net.torso == "mlp":
        kwargs["hidden_sizes"] = tuple(net.mlp_hidden_sizes)
    elif net.torso == "impala_resnet":
        kwargs["channels"] = tuple(net.resnet_channels)
    if not hasattr(action_space, "n"):
        raise ValueError(f"{config.env.name} has action space {action_space}; this agent "
                         f"needs a discrete (Discrete) action space.")
    return networks.ActorCritic(torso=networks.make_torso(net.torso, **kwargs),
                                num_actions=int(action_space.n),
                                shared_torso=bool(net.shared_torso))


def make_run_dir(config: ml_collections.ConfigDict, name: str,
                 resume_from: str | None = None) -> str:
    """config.run_dir; else the run dir of the checkpoint resumed from; else a new one."""
    if config.run_dir:
        return config.run_dir
    if resume_from and checkpoint.run_dir_of(resume_from):
        return checkpoint.run_dir_of(resume_from)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{config.env.name}-s{config.seed}-{stamp}")


def run(config: ml_collections.ConfigDict, make_agent: AgentBuilder, name: str,
        **train_kwargs: Any) -> TrainResult:
    """Trains the agent that `make_agent` builds, as configured; returns the result."""
    distributed.initialize(distributed_config(config))  # before anything touches devices
    rc = runtime_config(config)
    ec = env_config(config)
    envs.check_env_id(ec.name)  # fail before any thread or compile starts
    resume_from = checkpoint.resolve(config.resume) if config.get("resume") else None
    probe = envs.make_env(ec, 1, config.seed)
    network = make_network(config, probe.action_space)
    example_obs = probe.reset()
    probe.close()
    agent = make_agent(network, config.agent, rc.num_updates)
    run_dir = make_run_dir(config, name, resume_from)
    progress = None
    if resume_from:
        progress = _restore(resume_from, agent, example_obs, config, name, run_dir)
        train_kwargs["resume"] = progress
    main = distributed.is_main_process()  # only process 0 writes files and prints
    logger = MetricsLogger(run_dir, rc.total_env_steps, config.console_every_s, enabled=main,
                           resume_step=progress.env_steps if progress else None)
    if main and config.get("checkpoint_keep", 0) > 0:
        train_kwargs["checkpointer"] = checkpoint.Checkpointer(
            os.path.join(run_dir, "checkpoints"), every_updates=config.checkpoint_every_updates,
            every_minutes=config.checkpoint_every_minutes, keep=config.checkpoint_keep,
            metadata={"experiment": name, "env": ec.name, "seed": config.seed,
                      "config": json.loads(config.to_json())})
    if main:
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            f.write(config.to_json(indent=2))
    print(f"run dir: {run_dir}  ({rc.num_updates} updates of {rc.steps_per_update} steps)",
          flush=True)
    result = train(agent, lambda n, seed: envs.make_env(ec, n, seed), rc, logger, **train_kwargs)
    if not main:
        return result
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"env_steps": result.env_steps, "updates": result.updates,
                   **result.episode_summary}, f, indent=2)
    return result


def _restore(path: str, agent: Agent, example_obs, config: ml_collections.ConfigDict,
             name: str, run_dir: str) -> checkpoint.Progress:
    """Loads `path` into the structure a fresh run would start from; fails naming what differs."""
    template = jax.eval_shape(agent.init, jax.random.key(config.seed), example_obs)
    progress = checkpoint.restore(path, template, experiment=name,
                                  config=json.loads(config.to_json()))
    newer = [s for s in checkpoint.list_steps(os.path.join(run_dir, "checkpoints"))
             if s > progress.updates]
    if newer:
        raise ValueError(f"cannot resume from update {progress.updates} into {run_dir}: it has "
                         f"newer checkpoints {newer}. Resume from the newest, or pass "
                         f"--config.run_dir=<new dir> to branch off.")
    print(f"resuming from {path} (update {progress.updates:,d}, env step "
          f"{progress.env_steps:,d})", flush=True)
    return progress


def cli(run_fn: Callable[[ml_collections.ConfigDict], Any], default_config: str) -> None:
    """Command-line entry: `--config=file.py[:variant]` plus `--config.x=y` overrides.

    The flag is defined here, when a script runs, not at import: several experiment modules
    can then be imported side by side (tests, sweeps) without clashing absl flags.
    """
    from absl import app
    from ml_collections import config_flags

    flag = config_flags.DEFINE_config_file(
        "config", default_config, "Experiment config file (`:variant` selects a variant).",
        lock_config=True)
    def main(argv):
        del argv
        run_fn(flag.value)  # returns None: app.run passes main's result to sys.exit

    app.run(main)
