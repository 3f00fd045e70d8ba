"""Glue from an experiment's ConfigDict to a training run; algorithm-agnostic.

An experiment script passes its config and a `make_agent(network, agent_config, num_updates)`
builder; this module validates the config (`validate`, docs/robustness.md), builds the envs,
network, run directory, logger and checkpointer, restores a checkpoint for `config.resume`, and
calls `train`. See docs/checkpoints.md.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
from typing import Any, Callable, Sequence

import jax
import ml_collections

import networks
from agents import policy, schedules
from sebulba import (checkpoint, compile_cache, distributed, envs, evaluation, layout, topology,
                     validation)
from sebulba.agent import Agent
from sebulba.logging import MetricsLogger
from sebulba.runner import (Interrupted, RuntimeConfig, TrainResult, train,
                            validate_runtime_config)
from sebulba.validation import ConfigError

AgentBuilder = Callable[[Any, ml_collections.ConfigDict, int], Agent]
ConfigCheck = Callable[[ml_collections.ConfigDict], None]


def runtime_config(config: ml_collections.ConfigDict) -> RuntimeConfig:
    fields = {f.name for f in dataclasses.fields(RuntimeConfig)}
    values = {k: config[k] for k in fields if k in config}
    for k in ("actor_device_ids", "learner_device_ids"):
        if isinstance(values.get(k), list):
            values[k] = tuple(values[k])
    return RuntimeConfig(**values)


def distributed_config(config: ml_collections.ConfigDict) -> distributed.DistributedConfig:
    return distributed.DistributedConfig(**_distributed_values(config))


def validate(config: ml_collections.ConfigDict, *, agent_config: type | None = None,
             checks: Sequence[ConfigCheck] = (), devices: bool = True,
             env_id: bool = True) -> RuntimeConfig:
    """Checks a whole experiment config; raises ConfigError (a ValueError) naming the field,
    the bad value and what is allowed. Builds no env, starts no thread, compiles nothing.

    `agent_config`: the agent's frozen dataclass; `config.agent` is type-checked against it and
    built once (its own range checks run). `checks`: the experiment's extra checks (e.g. PPO's
    minibatch divisibility). `devices`: also check device ids against this host's devices,
    unless the run will join a multi-host job (devices may not be queried before joining;
    `run` then checks them right after). `env_id`: check that env.name is an EnvPool id (off
    for a user environment).
    """
    dc = validation.build(distributed.DistributedConfig, _distributed_values(config),
                          "distributed")
    joining = dc.mode == "on" or dc.num_processes > 1 or (
        dc.mode == "auto" and distributed._under_slurm())
    if dc.mode != "off" and dc.num_processes > 1:
        validation.check_coordinator(dc.coordinator_address, dc.process_id)
    rc = runtime_config(config)
    validate_runtime_config(rc, num_processes=dc.num_processes)
    for name in ("console_every_s", "checkpoint_every_minutes"):
        if name in config:
            validation.non_negative(name, config[name])
    for name in ("checkpoint_every_updates", "checkpoint_keep", "eval_every_updates"):
        if name in config:
            validation.non_negative(name, config[name], integer=True)
    for name in ("eval_episodes", "eval_num_envs"):
        if name in config:
            validation.require(validation.is_int(config[name]) and config[name] >= 1, name,
                               config[name], "must be an integer >= 1.")
    validation.one_of("eval_policy", config.get("eval_policy", "greedy"),
                      policy.EVAL_POLICIES, "an evaluation policy")
    for name in ("run_dir", "resume"):
        validation.require(isinstance(config.get(name, ""), str), name, config.get(name),
                           "must be a string (a path, or \"\").")
    ec = validation.build(envs.EnvConfig, config.env.to_dict(), "env")
    try:
        if env_id:
            envs.check_env_id(ec.name)
    except ValueError as e:
        raise ConfigError(f"env.name={ec.name!r}: {e}") from None
    _validate_network(config.network)
    if agent_config is not None:
        validation.build(agent_config, config.agent.to_dict(), "agent")
    for check in checks:
        try:
            check(config)
        except ConfigError:
            raise
        except ValueError as e:  # an experiment's own check (e.g. PPO minibatches): a user error
            raise ConfigError(str(e)) from e
    run_dir = config.get("run_dir", "")
    if config.get("resume"):
        try:
            resolved = checkpoint.resolve(config.resume)
            if checkpoint.is_checkpoint_dir(os.path.abspath(os.path.expanduser(
                    config.resume))):
                # An explicit checkpoint has no fallback: a damaged one fails here, cheaply
                # (metadata only; damaged data shows when `_restore` reads it).
                checkpoint.check_metadata(resolved)
        except (FileNotFoundError, checkpoint.DamagedCheckpointError) as e:
            raise ConfigError(f"resume={config.resume!r}: {e}") from None
        run_dir = run_dir or checkpoint.run_dir_of(resolved) or ""
    validation.check_writable_dir("run_dir", run_dir or "runs")
    if devices and not joining:
        topology.make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.num_envs)
    return rc


def _validate_network(net: ml_collections.ConfigDict) -> None:
    validation.one_of("network.torso", net.get("torso"), sorted(networks.TORSOS), "a torso")
    for name in ("mlp_hidden_sizes", "resnet_channels"):
        sizes = net.get(name, (1,))
        validation.require(isinstance(sizes, (list, tuple)) and len(sizes) > 0 and all(
            validation.is_int(n) and n > 0 for n in sizes), f"network.{name}", sizes,
            "must be a non-empty tuple of positive integers.")
    lstm = net.get("lstm_size", 0)
    validation.require(validation.is_int(lstm) and lstm >= 0, "network.lstm_size", lstm,
                       "must be an integer >= 0 (0: feed-forward; > 0: an LSTM core of that "
                       "size between torso and heads, docs/recurrent.md).")


def _distributed_values(config: ml_collections.ConfigDict) -> dict:
    if "distributed" not in config:
        return {"mode": "off"}
    values = config.distributed.to_dict()
    if isinstance(values.get("local_device_ids"), list):
        values["local_device_ids"] = tuple(values["local_device_ids"])
    return values


def env_config(config: ml_collections.ConfigDict) -> envs.EnvConfig:
    return envs.EnvConfig(**config.env.to_dict())


def make_network(config: ml_collections.ConfigDict, action_space) -> Any:
    """ActorCritic with the configured torso and the policy head for `action_space`.

    Continuous (Box) parts read the optional `network.continuous_bounds` ("clip" | "tanh"),
    `network.state_dependent_std` and `network.init_log_std` (defaults: clip, False, 0.0).
    `network.lstm_size` > 0 (optional, default 0) builds a RecurrentActorCritic with an LSTM
    core of that size instead (docs/recurrent.md).
    """
    net = config.network
    kwargs: dict[str, Any] = {}
    if net.torso == "mlp":
        kwargs["hidden_sizes"] = tuple(net.mlp_hidden_sizes)
    elif net.torso == "impala_resnet":
        kwargs["channels"] = tuple(net.resnet_channels)
    # Any torso, built-in or registered (networks.register_torso), takes the optional
    # `network.torso_kwargs` as constructor arguments.
    kwargs.update(_plain(net.get("torso_kwargs", {})))
    try:
        dist = networks.from_space(
            action_space, bounds=net.get("continuous_bounds", "clip"),
            state_dependent_std=bool(net.get("state_dependent_std", False)),
            init_log_std=float(net.get("init_log_std", 0.0)))
    except ValueError as e:
        raise ValueError(f"{config.env.name}: {e}") from None
    torso = networks.make_torso(net.torso, **kwargs)
    lstm_size = int(net.get("lstm_size", 0))
    if lstm_size > 0:
        return networks.RecurrentActorCritic(torso=torso, lstm_size=lstm_size, action_dist=dist,
                                             shared_torso=bool(net.shared_torso))
    return networks.ActorCritic(torso=torso, action_dist=dist,
                                shared_torso=bool(net.shared_torso))


def _plain(value: Any) -> Any:
    """ConfigDict -> dict and lists -> tuples (flax module fields must be hashable)."""
    if isinstance(value, (ml_collections.ConfigDict, dict)):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


def resolve_layout(config: ml_collections.ConfigDict) -> layout.Layout | None:
    """Fills the auto (0) layout fields of `config` in place, `num_actor_threads` and
    `env.num_threads` (sebulba/layout.py), and returns the choice (None when a field is not an
    integer: `validate` then names it). In place, so that everything built from the config
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


def make_run_dir(config: ml_collections.ConfigDict, name: str,
                 resume_from: str | None = None) -> str:
    """config.run_dir; else the run dir of the checkpoint resumed from; else a new one."""
    if config.run_dir:
        return config.run_dir
    if resume_from and checkpoint.run_dir_of(resume_from):
        return checkpoint.run_dir_of(resume_from)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{config.env.name}-s{config.seed}-{stamp}")


def run(config: ml_collections.ConfigDict, make_agent: AgentBuilder, name: str, *,
        agent_config: type | None = None, checks: Sequence[ConfigCheck] = (),
        wrap_env: Callable[[Any], Any] | None = None,
        make_env: Callable[[int, int], Any] | None = None, **train_kwargs: Any) -> TrainResult:
    """Trains the agent that `make_agent` builds, as configured; returns the result.

    `agent_config` and `checks` go to `validate`, which runs first. `wrap_env(env)` wraps every
    environment batch the actors build (user adapters, fault injection in tests).
    `make_env(num_envs, seed)` replaces the EnvPool factory with a user environment that has
    the sebulba/envs.py API (`config.env.name` then only names the run).
    """
    choices = resolve_layout(config)  # auto (0) layout fields, before the checks that use them
    # Every static check before anything joins, builds an env, starts a thread or compiles.
    rc = validate(config, agent_config=agent_config, checks=checks, devices=False,
                  env_id=make_env is None)
    distributed.initialize(distributed_config(config))  # before anything touches devices
    if choices is not None and distributed.is_main_process():
        print(choices.describe(len(rc.actor_device_ids), rc.num_envs, rc.learner_device_ids,
                               rc.actor_device_ids), flush=True)
    compile_cache.enable(rc.compilation_cache_dir)  # before anything compiles
    topology.make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.num_envs)
    ec = env_config(config)
    resume_from = checkpoint.resolve(config.resume) if config.get("resume") else None
    base_env = make_env or (lambda n, seed: envs.make_env(ec, n, seed))
    probe = base_env(1, config.seed)
    network = make_network(config, probe.action_space)
    example_obs = probe.reset()
    probe.close()
    horizon = schedules.Horizon(rc.num_updates)  # an int: what make_agent gets as num_updates
    agent = make_agent(network, config.agent, horizon)
    run_dir = make_run_dir(config, name, resume_from)
    progress = None
    done = (0, 0)  # (updates, env steps) before this session
    if resume_from:
        progress = _restore(resume_from, agent, example_obs, config, name, run_dir)
        train_kwargs["resume"] = progress
        done = (progress.updates, progress.env_steps)
        # The same horizon keeps the checkpoint's schedule exactly; another re-stretches it
        # from the checkpoint's rate (agents/schedules.py, docs/checkpoints.md).
        horizon = schedules.resumed_horizon(schedules.trained_horizon(progress.metadata),
                                            progress.updates, rc.planned_updates(*done))
        agent = make_agent(network, config.agent, horizon)
    main = distributed.is_main_process()  # only process 0 writes files and prints
    logger = MetricsLogger(run_dir, rc.planned_env_steps(*done), config.console_every_s,
                           enabled=main, resume_step=progress.env_steps if progress else None,
                           wandb_config=config.get("wandb"),  # off unless wandb.project is set
                           run_config=json.loads(config.to_json()))
    if main and config.get("checkpoint_keep", 0) > 0:
        train_kwargs["checkpointer"] = checkpoint.Checkpointer(
            os.path.join(run_dir, "checkpoints"), every_updates=config.checkpoint_every_updates,
            every_minutes=config.checkpoint_every_minutes, keep=config.checkpoint_keep,
            metadata={"experiment": name, "env": ec.name, "seed": config.seed,
                      "config": json.loads(config.to_json()),
                      "lr_horizon": horizon.to_dict()})
    evaluator = None
    if main and config.get("eval_every_updates", 0) > 0:
        train_kwargs["on_update"], evaluator = _with_evaluation(
            config, network, agent, example_obs, make_env, logger, train_kwargs.get("on_update"))
    if main:
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            f.write(config.to_json(indent=2))
    print(f"run dir: {run_dir}  ({rc.planned_updates(*done) - done[0]} updates of "
          f"{rc.steps_per_update} steps)", flush=True)
    def make_actor_env(n: int, seed: int):
        env = base_env(n, seed)
        return wrap_env(env) if wrap_env is not None else env
    try:
        result = train(agent, make_actor_env, rc, logger, example_obs=example_obs, **train_kwargs)
    except Interrupted as e:  # Ctrl-C: the same summary as SIGTERM, one line, exit 130
        if main:
            _write_summary(run_dir, e.result, evaluator)
        hint = f"; resume with --config.resume={run_dir}" if e.result.checkpoint else ""
        print(f"{e}{hint}.", flush=True)
        _exit_now_if_abandoned(e.result, 130)
        raise SystemExit(130) from None
    except distributed.PeerLost as e:
        exit_on_lost_peer(e, train_kwargs.get("checkpointer"))
    if main:
        _write_summary(run_dir, result, evaluator)
    _exit_now_if_abandoned(result, 0)
    return result


def exit_on_lost_peer(error: Exception, checkpointer) -> None:
    """One message naming the lost process and the newest checkpoint, then exit 1 (either
    runtime). No normal exit with a dead peer: jax.distributed's atexit shutdown would abort."""
    newest = (f" Newest checkpoint: {checkpointer.path(checkpointer.last_saved)}."
              if checkpointer is not None and checkpointer.last_saved is not None else "")
    distributed.exit_lost_peer(f"{error}{newest}")


def _exit_now_if_abandoned(result: TrainResult, status: int) -> None:
    """After a second signal abandoned an update, ends the process at once: files are closed
    and checkpoints written, but a normal exit would wait for the abandoned computation."""
    if result.abandoned:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _write_summary(run_dir: str, result: TrainResult, evaluator) -> None:
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        # stopped_by tells a finished run from one stopped early by a signal (sweeps rerun those).
        json.dump({"env_steps": result.env_steps, "updates": result.updates,
                   "stopped_by": result.stopped_by, "checkpoint": result.checkpoint,
                   **result.episode_summary,
                   **(evaluator.last if evaluator is not None else {})}, f, indent=2)


def _with_evaluation(config, network, agent: Agent, example_obs, user_make_env, logger,
                     on_update):
    """Starts periodic background evaluation (sebulba/evaluation.py); returns the on_update
    hook that triggers it (and calls the caller's own `on_update`, if any), and the evaluator."""
    kind = config.get("eval_policy", "greedy")
    ap = jax.eval_shape(lambda key: agent.actor_params(agent.init(key, example_obs)),
                        jax.random.key(0))
    try:
        policy.check_eval_policy(kind, ap)
    except ValueError as e:
        raise ConfigError(f"eval_policy={kind!r}: {e}") from None
    obs_clip = float(config.agent.get("obs_clip", 10.0))
    eval_cfg = evaluation.eval_env_config(config)
    # Env ids get the evaluation settings (whole games); a user's env factory is used as is.
    make_env = user_make_env or (lambda n, seed: envs.make_env(eval_cfg, n, seed))
    evaluator = evaluation.PeriodicEvaluator(
        new_actor=lambda ap, n: policy.eval_actor(kind, network, agent, ap, n, obs_clip),
        actor_params=agent.actor_params, make_env=make_env, logger=logger,
        every_updates=int(config.eval_every_updates), episodes=int(config.eval_episodes),
        num_envs=int(config.eval_num_envs))
    logger.on_close(evaluator.close)

    def hook(update: int, env_steps: int, state) -> None:
        evaluator.on_update(update, env_steps, state)
        if on_update is not None:
            on_update(update, env_steps, state)
    return hook, evaluator


def _restore(path: str, agent: Agent, example_obs, config: ml_collections.ConfigDict,
             name: str, run_dir: str) -> checkpoint.Progress:
    """Loads the checkpoint into the structure a fresh run would start from; fails naming what
    differs (a ConfigError). `path` is the newest checkpoint `config.resume` resolves to; a run
    dir or `checkpoints` dir in `config.resume` falls back past damaged newer checkpoints
    (sebulba/checkpoint.py), which are then moved aside in `run_dir`, because this run will
    save those update numbers again."""
    template = jax.eval_shape(agent.init, jax.random.key(config.seed), example_obs)
    source = config.get("resume") or path
    try:
        progress = checkpoint.restore(source, template, experiment=name,
                                      config=json.loads(config.to_json()))
    except ValueError as e:  # damaged, another experiment, or a tree that does not fit
        raise ConfigError(f"resume={source!r}: {e}") from e
    ckpt_dir = os.path.abspath(os.path.join(run_dir, "checkpoints"))
    moved = []
    for damaged in progress.damaged:
        if os.path.dirname(damaged) == ckpt_dir and distributed.is_main_process():
            moved.append(f"{os.path.basename(damaged)} -> "
                         f"{os.path.basename(checkpoint.move_aside(damaged))}")
    newer = [s for s in checkpoint.list_steps(ckpt_dir) if s > progress.updates
             and os.path.join(ckpt_dir, str(s)) not in progress.damaged]
    if newer:
        raise ConfigError(f"resume={source!r}: cannot resume from update {progress.updates} "
                          f"into {run_dir}: it has newer checkpoints {newer}. Resume from the "
                          f"newest, or pass --config.run_dir=<new dir> to branch off.")
    where = (f"; damaged checkpoint(s) moved aside in {ckpt_dir}: {', '.join(moved)}"
             if moved else "")
    print(f"resuming from {progress.checkpoint or path} (update "
          f"{progress.updates:,d}, env step {progress.env_steps:,d}){where}", flush=True)
    return progress


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
