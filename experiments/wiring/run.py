"""A training run from a config, on either runtime: read, join, start the runtime, build,
restore, train, summarise. One sequence for both; what differs is the runtime's `Driver`
(experiments/wiring/drivers/: sebulba.py, anakin.py).

`run(config)` is what every experiment entry point calls. It reads the config into checked
sections (sections.py) before anything joins, builds an env, starts a thread or compiles;
joins the multi-host job; starts the runtime (its devices, one env probe); builds the network
and agent (build.py) for the batch the runtime gives; restores a checkpoint for
`config.resume` (session.py), makes the logger, checkpointer and config.json (run_files.py)
and the evaluator (evaluation.py); hands the run to the runtime's `train`; and ends it
(summary.json; exits.py after Ctrl-C or a lost peer). See docs/checkpoints.md for resume,
docs/robustness.md for errors.
"""
from __future__ import annotations

from typing import Any, Callable

import ml_collections

import agents
from experiments.wiring.build import build_network, describe_mask, describe_torso
from experiments.wiring.evaluation import with_evaluation
from experiments.wiring.exits import exit_interrupted, exit_now_if_abandoned, exit_on_lost_peer
from experiments.wiring.run_files import RunFiles
from experiments.wiring.sections import read
from experiments.wiring.session import Session
from podracer import distributed
from podracer.finite import NonFiniteError
from podracer.legal import NoLegalActionError
from podracer.results import Interrupted
from podracer.validation import ConfigError


def run(config: ml_collections.ConfigDict, make_env: Callable[[int, int], Any] | None = None,
        *, agent: str | agents.AgentSpec | None = None, name: str | None = None,
        wrap_env: Callable[[Any], Any] | None = None, **train_kwargs: Any) -> Any:
    """Trains the configured agent on `config.runtime` (the entry point of every experiment).

    Args:
      config: the experiment's ConfigDict; every section is checked before anything starts.
      make_env: Sebulba only: `make_env(num_envs, seed)` builds a user env batch with the
        sebulba/envs.py API instead of EnvPool's (`config.env.name` then only names the run).
      agent: the entry point's agent (a registered name or an `agents.AgentSpec`), used when
        `config.agent_name` is empty.
      name: names the run dir and the checkpoints' experiment (default: the agent's name).
      wrap_env: Sebulba only: wraps every env batch the actors build (user adapters, fault
        injection in tests).
      **train_kwargs: passed to the runtime's `train` (`on_update`; Sebulba's `actor_hook`).

    Returns:
      The runtime's `podracer.results.TrainResult` (learner state, env steps, updates).

    Raises:
      ConfigError: a bad config value, named with what is allowed, before anything starts.
      Interrupted: Ctrl-C, after the final checkpoint and summary.json.
      NonFiniteError: the run diverged (a population: every member did), after the final
        checkpoint and summary.json (`diverged` in it: where and why).
      distributed.PeerLost: another process of a multi-host job died.
    """
    # Every static check before anything joins, builds an env, starts a thread or compiles.
    sections = read(config, agent=agent, devices=False, env_id=make_env is None)
    driver = sections.driver
    if not driver.takes_host_envs and (make_env is not None or wrap_env is not None):
        given = " and ".join(n for n, f in (("make_env", make_env), ("wrap_env", wrap_env))
                             if f is not None)
        raise ConfigError(
            f"runtime={sections.run.runtime!r} steps the JAX-native env env.name="
            f"{sections.env.name!r} on the devices; {given} (host env batches) apply to "
            f"runtime='sebulba' only. Register a JAX env with anakin.envs.register_env, or run "
            f"with --config.runtime=sebulba.")
    name = name or sections.spec.name
    distributed.initialize(sections.distributed)  # before anything touches devices
    main = distributed.is_main_process()  # only process 0 writes files and prints
    started = driver.start(sections, make_env, wrap_env)
    network = build_network(sections, started.action_space, started.observation_space)
    torso_line = describe_torso(sections, network, started.example_obs)
    mask_line = describe_mask(network)
    session = Session(sections, name, network, started)  # the agent, restored on resume
    started.check(session.agent)
    files = RunFiles(session)
    # The runtime closes the logger when it ends; the `with` closes it if a step before fails.
    with files.logger() as logger:
        if session.progress is not None:
            train_kwargs["resume"] = session.progress
        if main and sections.run.checkpoint_keep > 0:
            train_kwargs["checkpointer"] = files.checkpointer()
        evaluator = None
        if main and sections.run.eval_every_updates > 0:
            train_kwargs["on_update"], evaluator = with_evaluation(
                sections, network, session.agent, started, logger,
                train_kwargs.get("on_update"))
        files.write_config()
        if main:
            _announce(session, started, torso_line, mask_line)
        try:
            result = started.train(session.agent, logger, **train_kwargs)
        except Interrupted as e:  # Ctrl-C: the same summary as SIGTERM, one line, exit 130
            exit_interrupted(e, files, evaluator, main, runtime=driver.name)
        except distributed.PeerLost as e:
            exit_on_lost_peer(e, train_kwargs.get("checkpointer"))
        except NoLegalActionError as e:
            raise NoLegalActionError(f"env.name={sections.env.name!r}: {e}") from None
        except NonFiniteError as e:  # summarised as a finished run that diverged, then raised
            if main and e.result is not None:
                files.write_summary(e.result, evaluator, runtime=driver.name,
                                      diverged=None if session.members else {
                                          "update": e.result.updates,
                                          "env_steps": e.result.env_steps, "error": str(e)})
            raise
        if main:
            files.write_summary(result, evaluator, runtime=driver.name)
        exit_now_if_abandoned(result, 0)  # a second signal: exit without waiting for the call
    return result


def _announce(session: Session, started, torso_line: str | None,
              mask_line: str | None) -> None:
    """The start-up lines: the layout, the encoder of each observation leaf (auto), the
    action mask, the batch and how the agent splits it, the run dir."""
    shape, plan, done = session.shape, session.plan, session.done
    spec = session.sections.spec
    for line in (*started.describe, *(line for line in (torso_line, mask_line) if line)):
        print(line, flush=True)
    split = spec.describe(session.sections.agent, shape) if spec.describe is not None else ""
    print(f"batch: {shape.batch_envs} envs x {shape.unroll_length} steps = {shape.samples} "
          f"samples per update{'; ' + split if split else ''}", flush=True)
    if session.members is not None:
        print(f"population: {len(session.members)} members in one program (each its own run "
              f"under {session.run_dir}/members/): "
              f"{', '.join(m.name for m in session.members[:4])}"
              f"{', ...' if len(session.members) > 4 else ''}", flush=True)
    print(f"run dir: {session.run_dir}  ({plan.planned_updates(*done) - done[0]} updates of "
          f"{plan.steps_per_update} steps)", flush=True)
