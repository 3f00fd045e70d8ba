"""A run from a config on the Anakin runtime (anakin/, docs/anakin.md): experiments/wiring/run.py's
counterpart, kept thin.

It reads and checks the config with the same sections (sections.py), builds the network and the
agent the same way (build.py) and shares the restore, run dir, logger, checkpointer and
evaluation; it differs only where the runtime does. The devices are `learner_device_ids` (each
acts, steps its envs and learns); `num_envs` is the environments per process, split evenly over
them; the Sebulba-only fields (`actor_device_ids`, `num_actor_threads`, `queue_size`,
`actor_overlap`, ...) do not apply, and `synchronous` is True by nature (the policy that acts is
the one being updated: lag 0). Periodic evaluation (`eval_every_updates`) is Sebulba's
background evaluator playing the same JAX env from the host (anakin/host_env.py). Ctrl-C and
SIGTERM end the process as in a Sebulba run (session.exit_interrupted, exit_now_if_abandoned):
Ctrl-C writes summary.json and exits 130, SIGTERM exits 0, at once after a second signal.
"""
from __future__ import annotations

import copy
from typing import Any

import jax
import ml_collections

import agents
from anakin import envs as anakin_envs
from anakin import loop, runtime
from anakin.host_env import HostEnv
from experiments.wiring.build import build_network
from experiments.wiring.evaluation import with_evaluation
from experiments.wiring.session import (Session, exit_interrupted, exit_now_if_abandoned,
                                        exit_on_lost_peer, write_summary)
from experiments.wiring.sections import Sections, read
from sebulba import distributed
from sebulba.runner import Interrupted
from sebulba.validation import ConfigError


def for_anakin(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """A copy of `config` with the Sebulba-only layout fields set to what Anakin does (one
    "actor" per process, on-policy), so the agents' checks (PPO's minibatch split) and builders
    (`correction="auto"` -> none; batch_envs) see the Anakin layout."""
    config = copy.deepcopy(config)
    config.synchronous = True
    config.actor_device_ids = (0,)
    config.num_actor_threads = 1
    return config


def anakin_config(sections: Sections, config: ml_collections.ConfigDict
                  ) -> runtime.AnakinConfig:
    rc = sections.runtime
    try:
        return runtime.AnakinConfig(
            device_ids=tuple(rc.learner_device_ids), num_envs=rc.num_envs,
            unroll_length=rc.unroll_length, total_env_steps=rc.total_env_steps, seed=rc.seed,
            stop_at_return=rc.stop_at_return, max_nonfinite_updates=rc.max_nonfinite_updates,
            updates_per_call=config.get("updates_per_call", 1))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def read_anakin(config: ml_collections.ConfigDict, *,
                agent: str | agents.AgentSpec | None = None,
                env: bool = True) -> tuple[Sections, runtime.AnakinConfig]:
    """Every static check of an Anakin config (ConfigError naming the field), before anything
    joins, compiles or steps; `config` is already `for_anakin`. `env`: also check the env name;
    `run` checks it right after joining a multi-host job instead: importing gymnax starts JAX's
    backend, which must wait for the join."""
    sections = read(config, agent=agent, devices=False, env_id=False)
    ac = anakin_config(sections, config)
    if env:
        make_env(sections)
    return sections, ac


def make_env(sections: Sections):
    """The JAX-native env `env.name` names; a ConfigError naming it when there is none."""
    try:
        return anakin_envs.make_env(sections.env.name, dict(sections.env.options or {}))
    except ValueError as e:
        raise ConfigError(f"env.name={sections.env.name!r}: {e}") from None


def run(config: ml_collections.ConfigDict, *, agent: str | agents.AgentSpec | None = None,
        name: str | None = None, **train_kwargs: Any) -> loop.TrainResult:
    """Trains the configured agent on the JAX-native env `env.name` with the Anakin runtime;
    writes the same run dir as a Sebulba run (metrics.jsonl, TensorBoard, config.json,
    summary.json, checkpoints)."""
    config = for_anakin(config)
    sections, ac = read_anakin(config, agent=agent, env=False)
    name = name or sections.spec.name
    distributed.initialize(sections.distributed)  # before any device query
    env = make_env(sections)
    try:
        runtime.make_mesh(ac.device_ids)  # device ids against this host's devices
    except ValueError as e:
        raise ConfigError(f"learner_device_ids={list(ac.device_ids)}: {e}") from None
    network = build_network(sections, env.action_space)
    example_obs = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    session = Session(config, sections, name, network, example_obs, plan=ac)
    main = distributed.is_main_process()
    done = session.done
    planned = ac.planned_updates(*done)
    # The runtime closes the logger when it ends; the `with` closes it if a step before fails.
    with session.logger() as logger:
        if main and sections.run.checkpoint_keep > 0:
            train_kwargs["checkpointer"] = session.checkpointer()
        evaluator = None
        if main and sections.run.eval_every_updates > 0:
            # Sebulba's background evaluator, on the same JAX env stepped from the host.
            host_env = lambda n, seed: HostEnv(env, n, seed)  # noqa: E731
            train_kwargs["on_update"], evaluator = with_evaluation(
                sections, network, session.agent, example_obs, host_env, logger,
                train_kwargs.get("on_update"))
        session.write_config()
        print(f"run dir: {session.run_dir}  (anakin: {planned - done[0]} updates of "
              f"{ac.steps_per_update} steps on {len(ac.device_ids)} device(s) x "
              f"{jax.process_count()} process(es))", flush=True)
        try:
            result = loop.train(session.agent, env, ac, logger, resume=session.progress,
                                **train_kwargs)
        except Interrupted as e:  # Ctrl-C: as a Sebulba run, summary.json, one line, exit 130
            exit_interrupted(e, session.run_dir, evaluator, main, runtime="anakin")
        except distributed.PeerLost as e:
            exit_on_lost_peer(e, train_kwargs.get("checkpointer"))
        if main:
            write_summary(session.run_dir, result, evaluator, runtime="anakin")
        exit_now_if_abandoned(result, 0)  # a second SIGTERM: exit 0 without waiting for the call
    return result
