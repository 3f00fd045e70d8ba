"""Glue from an experiment's ConfigDict to an Anakin run (anakin/, docs/anakin.md).

The Anakin counterpart of `sebulba.experiment.run`, kept thin: it reuses that module's config
validation, network builder, run-dir naming and checkpoint restore, and differs only where the
runtime does. The devices are `learner_device_ids` (each acts, steps its envs and learns);
`num_envs` is the environments per process, split evenly over them; the Sebulba-only fields
(`actor_device_ids`, `num_actor_threads`, `queue_size`, `actor_overlap`, ...) do not apply,
and `synchronous` is True by nature (the policy that acts is the one being updated: lag 0).
Periodic evaluation (`eval_every_updates`) is Sebulba's background evaluator playing the same
JAX env from the host (anakin/host_env.py).
"""
from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable, Sequence

import jax
import ml_collections

from agents import schedules
from anakin import envs as anakin_envs
from anakin import loop, runtime
from anakin.host_env import HostEnv
from sebulba import checkpoint, distributed, experiment, validation
from sebulba.logging import MetricsLogger
from sebulba.validation import ConfigError

RUNTIMES = ("sebulba", "anakin")
AgentBuilder = Callable[[Any, ml_collections.ConfigDict, int], Any]


def for_anakin(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """A copy of `config` with the Sebulba-only layout fields set to what Anakin does (one
    "actor" per process, on-policy), so shared checks (PPO's minibatch split) and agent
    builders (`correction="auto"` -> none; batch_envs) see the Anakin layout."""
    config = copy.deepcopy(config)
    config.synchronous = True
    config.actor_device_ids = (0,)
    config.num_actor_threads = 1
    return config


def anakin_config(config: ml_collections.ConfigDict) -> runtime.AnakinConfig:
    try:
        return runtime.AnakinConfig(
            device_ids=tuple(config.learner_device_ids), num_envs=config.num_envs,
            unroll_length=config.unroll_length, total_env_steps=config.total_env_steps,
            seed=config.seed, stop_at_return=config.get("stop_at_return"),
            max_nonfinite_updates=config.max_nonfinite_updates,
            updates_per_call=config.get("updates_per_call", 1))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_runtime(name: str) -> None:
    validation.one_of("runtime", name, RUNTIMES, "a runtime")


def validate(config: ml_collections.ConfigDict, *, agent_config: type | None = None,
             checks: Sequence = (), env: bool = True) -> runtime.AnakinConfig:
    """Every static check of an Anakin config (ConfigError naming the field), before anything
    joins, compiles or steps: the shared ones of `sebulba.experiment.validate`, the Anakin
    layout and (`env`) the env name. `run` checks the env right after joining a multi-host
    job instead: importing gymnax starts JAX's backend, which must wait for the join."""
    check_runtime(config.get("runtime", "anakin"))
    experiment.validate(config, agent_config=agent_config, checks=checks, devices=False,
                        env_id=False)
    ac = anakin_config(config)
    if env:
        make_env(config)
    return ac


def make_env(config: ml_collections.ConfigDict):
    """The JAX-native env `config.env` names; a ConfigError naming it when there is none."""
    try:
        return anakin_envs.make_env(config.env.name, _options(config))
    except ValueError as e:
        raise ConfigError(f"env.name={config.env.name!r}: {e}") from None


def _options(config: ml_collections.ConfigDict) -> dict:
    return dict(config.env.get("options", None) or {})


def run(config: ml_collections.ConfigDict, make_agent: AgentBuilder, name: str, *,
        agent_config: type | None = None, checks: Sequence = (),
        **train_kwargs: Any) -> loop.TrainResult:
    """Trains the agent `make_agent(network, config, num_updates)` builds on the JAX-native env
    `config.env.name` with the Anakin runtime; writes the same run dir as a Sebulba run
    (metrics.jsonl, TensorBoard, config.json, summary.json, checkpoints)."""
    config = for_anakin(config)
    ac = validate(config, agent_config=agent_config, checks=checks, env=False)
    distributed.initialize(experiment.distributed_config(config))  # before any device query
    env = make_env(config)
    try:
        runtime.make_mesh(ac.device_ids)  # device ids against this host's devices
    except ValueError as e:
        raise ConfigError(f"learner_device_ids={list(ac.device_ids)}: {e}") from None
    network = experiment.make_network(config, env.action_space)
    example_obs = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    horizon = schedules.Horizon(ac.num_updates)
    agent = make_agent(network, config, horizon)
    resume_from = checkpoint.resolve(config.resume) if config.get("resume") else None
    run_dir = experiment.make_run_dir(config, name, resume_from)
    progress, done = None, (0, 0)
    if resume_from:
        progress = experiment._restore(resume_from, agent, example_obs, config, name, run_dir)
        done = (progress.updates, progress.env_steps)
        horizon = schedules.resumed_horizon(schedules.trained_horizon(progress.metadata),
                                            progress.updates, ac.planned_updates(*done))
        agent = make_agent(network, config, horizon)
    main = distributed.is_main_process()
    planned = ac.planned_updates(*done)
    logger = MetricsLogger(run_dir, done[1] + (planned - done[0]) * ac.steps_per_update,
                           config.console_every_s, enabled=main,
                           resume_step=progress.env_steps if progress else None,
                           wandb_config=config.get("wandb"),
                           run_config=json.loads(config.to_json()))
    if main and config.get("checkpoint_keep", 0) > 0:
        train_kwargs["checkpointer"] = checkpoint.Checkpointer(
            os.path.join(run_dir, "checkpoints"), every_updates=config.checkpoint_every_updates,
            every_minutes=config.checkpoint_every_minutes, keep=config.checkpoint_keep,
            metadata={"experiment": name, "env": config.env.name, "seed": config.seed,
                      "config": json.loads(config.to_json()),
                      "lr_horizon": horizon.to_dict()})
    evaluator = None
    if main and config.get("eval_every_updates", 0) > 0:
        # Sebulba's background evaluator, on the same JAX env stepped from the host.
        host_env = lambda n, seed: HostEnv(env, n, seed)  # noqa: E731
        train_kwargs["on_update"], evaluator = experiment._with_evaluation(
            config, network, agent, example_obs, host_env, logger, train_kwargs.get("on_update"))
    if main:
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            f.write(config.to_json(indent=2))
    print(f"run dir: {run_dir}  (anakin: {planned - done[0]} updates of "
          f"{ac.steps_per_update} steps on {len(ac.device_ids)} device(s) x "
          f"{jax.process_count()} process(es))", flush=True)
    try:
        result = loop.train(agent, env, ac, logger, resume=progress, **train_kwargs)
    except distributed.PeerLost as e:
        experiment.exit_on_lost_peer(e, train_kwargs.get("checkpointer"))
    if main:
        with open(os.path.join(run_dir, "summary.json"), "w") as f:
            json.dump({"env_steps": result.env_steps, "updates": result.updates,
                       "stopped_by": result.stopped_by, "checkpoint": result.checkpoint,
                       "runtime": "anakin", **result.episode_summary,
                       **(evaluator.last if evaluator is not None else {})}, f, indent=2)
    return result
