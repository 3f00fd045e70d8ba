"""Glue from an experiment's ConfigDict to a training run; algorithm-agnostic.

An experiment script passes its config and a `make_agent(network, agent_config, num_updates)`
builder; this module builds the envs, network, run directory and logger, and calls `train`.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
from typing import Any, Callable

import ml_collections

import networks
from sebulba import envs
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


def make_run_dir(config: ml_collections.ConfigDict, name: str) -> str:
    if config.run_dir:
        return config.run_dir
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{config.env.name}-s{config.seed}-{stamp}")


def run(config: ml_collections.ConfigDict, make_agent: AgentBuilder, name: str,
        **train_kwargs: Any) -> TrainResult:
    """Trains the agent that `make_agent` builds, as configured; returns the result."""
    rc = runtime_config(config)
    ec = env_config(config)
    envs.check_env_id(ec.name)  # fail before any thread or compile starts
    probe = envs.make_env(ec, 1, config.seed)
    network = make_network(config, probe.action_space)
    probe.close()
    agent = make_agent(network, config.agent, rc.num_updates)
    run_dir = make_run_dir(config, name)
    logger = MetricsLogger(run_dir, rc.total_env_steps, config.console_every_s)
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        f.write(config.to_json(indent=2))
    print(f"run dir: {run_dir}  ({rc.num_updates} updates of {rc.steps_per_update} steps)",
          flush=True)
    result = train(agent, lambda n, seed: envs.make_env(ec, n, seed), rc, logger, **train_kwargs)
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"env_steps": result.env_steps, "updates": result.updates,
                   **result.episode_summary}, f, indent=2)
    return result
