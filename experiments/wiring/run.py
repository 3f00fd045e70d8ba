"""A training run from a config on the Sebulba runtime (or, for `runtime="anakin"`, handed to
experiments/wiring/anakin.py): read, join, build, restore, train, summarise.

`run(config)` is what every experiment entry point calls. It reads the config into checked
sections (sections.py) before anything joins, builds an env, starts a thread or compiles; joins
the multi-host job; probes the env once; builds the network and agent (build.py); restores a
checkpoint for `config.resume`, makes the run dir, logger, checkpointer (session.py) and
evaluator (evaluation.py); and hands the run to sebulba.runner.train. See docs/checkpoints.md
for resume, docs/robustness.md for errors.
"""
from __future__ import annotations

from typing import Any, Callable

import ml_collections

import agents
from experiments.wiring import anakin
from experiments.wiring.build import build_network
from experiments.wiring.evaluation import with_evaluation
from experiments.wiring.sections import read, resolve_layout
from experiments.wiring.session import (Session, exit_interrupted, exit_now_if_abandoned,
                                        exit_on_lost_peer, write_summary)
from sebulba import compile_cache, distributed, envs, topology
from sebulba.runner import Interrupted, train


def run(config: ml_collections.ConfigDict, make_env: Callable[[int, int], Any] | None = None,
        *, agent: str | agents.AgentSpec | None = None, name: str | None = None,
        wrap_env: Callable[[Any], Any] | None = None, **train_kwargs: Any) -> Any:
    """Trains the configured agent; returns the runtime's TrainResult.

    `agent`: the entry point's agent (a registered name or an `agents.AgentSpec`) when
    `config.agent_name` is empty. `name` names the run dir and the checkpoints' experiment
    (default: the agent's name). `wrap_env(env)` wraps every environment batch the actors build
    (user adapters, fault injection in tests). `make_env(num_envs, seed)` replaces the EnvPool
    factory with a user environment that has the sebulba/envs.py API (`config.env.name` then
    only names the run). Other keyword arguments go to the runtime's `train` (`on_update`,
    `actor_hook`).
    """
    if config.get("runtime", "sebulba") == "anakin":
        return anakin.run(config, agent=agent, name=name, **train_kwargs)
    choices = resolve_layout(config)  # auto (0) layout fields, before the checks that use them
    # Every static check before anything joins, builds an env, starts a thread or compiles.
    sections = read(config, agent=agent, devices=False, env_id=make_env is None)
    name = name or sections.spec.name
    rc = sections.runtime
    distributed.initialize(sections.distributed)  # before anything touches devices
    if choices is not None and distributed.is_main_process():
        print(choices.describe(len(rc.actor_device_ids), rc.num_envs, rc.learner_device_ids,
                               rc.actor_device_ids), flush=True)
    compile_cache.enable(rc.compilation_cache_dir)  # before anything compiles
    # Device ids against this host's devices, right after joining (the runtime reuses it).
    topo = topology.make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.num_envs)
    ec = sections.env
    base_env = make_env or (lambda n, seed: envs.make_env(ec, n, seed))
    probe = base_env(1, rc.seed)  # the one env probe of the run: action space, example obs
    network = build_network(sections, probe.action_space)
    example_obs = probe.reset()
    probe.close()
    session = Session(config, sections, name, network, example_obs)
    built = session.agent
    main = distributed.is_main_process()  # only process 0 writes files and prints
    # The runtime closes the logger when it ends; the `with` closes it if a step before fails.
    with session.logger() as logger:
        if session.progress is not None:
            train_kwargs["resume"] = session.progress
        if main and sections.run.checkpoint_keep > 0:
            train_kwargs["checkpointer"] = session.checkpointer()
        evaluator = None
        if main and sections.run.eval_every_updates > 0:
            train_kwargs["on_update"], evaluator = with_evaluation(
                sections, network, built, example_obs, make_env, logger,
                train_kwargs.get("on_update"))
        session.write_config()
        done = session.done
        print(f"run dir: {session.run_dir}  ({rc.planned_updates(*done) - done[0]} updates of "
              f"{rc.steps_per_update} steps)", flush=True)

        def make_actor_env(n: int, seed: int):
            env = base_env(n, seed)
            return wrap_env(env) if wrap_env is not None else env
        try:
            result = train(built, make_actor_env, rc, logger, example_obs=example_obs,
                           topology=topo, **train_kwargs)
        except Interrupted as e:  # Ctrl-C: the same summary as SIGTERM, one line, exit 130
            exit_interrupted(e, session.run_dir, evaluator, main)
        except distributed.PeerLost as e:
            exit_on_lost_peer(e, train_kwargs.get("checkpointer"))
        if main:
            write_summary(session.run_dir, result, evaluator)
        exit_now_if_abandoned(result, 0)
    return result
