"""What a run does alike on either runtime once its network exists (experiments/wiring/run.py):
the checkpoint read before the agent is built, the agent built once for the run's
learning-rate horizon (re-stretched on resume), the checkpoint fitted into it, the run dir,
the logger, the checkpointer, config.json and summary.json, and the exits after a lost peer
and after Ctrl-C."""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
from typing import Any

import jax
import numpy as np

from agents import schedules
from experiments.wiring import members as population_members
from experiments.wiring.build import build_agent
from experiments.wiring.drivers.protocol import Started
from experiments.wiring.sections import Sections
from podracer import checkpoint, distributed
from podracer.logging import MetricsLogger
from podracer.validation import ConfigError


def make_run_dir(sections: Sections, name: str, resume_from: str | None = None) -> str:
    """run.run_dir; else the run dir of the checkpoint resumed from; else a new one."""
    if sections.run.run_dir:
        return sections.run.run_dir
    if resume_from and checkpoint.run_dir_of(resume_from):
        return checkpoint.run_dir_of(resume_from)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{sections.env.name}-s{sections.runtime.seed}-{stamp}")


class Session:
    """What both runtimes do alike once the network exists: the agent for the run's horizon
    (re-stretched on resume), the restore, the run dir, the logger, the checkpointer and
    config.json. It reads the config only through `sections` (`sections.config` is what it
    records)."""

    def __init__(self, sections: Sections, name: str, network, started: Started) -> None:
        """`started`: the runtime after joining (its batch and update counts, its example
        observation, and how it builds the agent and its state's template)."""
        self.sections, self.name, self.network, self.started = sections, name, network, started
        self.shape, self.plan = started.shape, started.plan
        plan = started.plan
        self.members = sections.members  # several agents in one program, or None
        resume_from = checkpoint.resolve(sections.run.resume) if sections.run.resume else None
        self.run_dir = make_run_dir(sections, name, resume_from)
        self.progress: checkpoint.Progress | None = None
        self.done = (0, 0)  # (updates, env steps) before this session
        self.horizon = schedules.Horizon(plan.num_updates)
        loaded = read(resume_from, sections, name) if resume_from else None
        if loaded is not None:  # the checkpoint's counters before the agent is built
            self.done = (loaded.updates, loaded.env_steps)
            # The same horizon keeps the checkpoint's schedule exactly; another re-stretches it
            # from the checkpoint's rate (agents/schedules.py, docs/checkpoints.md).
            self.horizon = schedules.resumed_horizon(
                schedules.trained_horizon(loaded.metadata), loaded.updates,
                plan.planned_updates(*self.done))
        self.agent = self._build()  # once, for the run's horizon
        if loaded is not None:
            template = (started.template or _template)(self.agent, sections.runtime.seed,
                                                        started.example_obs)
            self.progress = restore(loaded, template, sections, self.run_dir)

    def _build(self):
        """The agent for the run's horizon: the runtime's (a population), or the one agent."""
        if self.started.build is not None:
            return self.started.build(self.network, self.horizon)
        return build_agent(self.sections, self.network, self.horizon, self.shape)

    def member_dir(self, member) -> str:
        return os.path.join(self.run_dir, "members", member.name)

    def logger(self) -> MetricsLogger | _Loggers:
        """The run's logger; a population's: one per member, each in its own run dir (member
        0 prints the console lines; every member prints its last)."""
        if self.members is None:
            return self._logger(self.run_dir, self.sections.config,
                                self.sections.run.console_every_s)
        return _Loggers([self._logger(self.member_dir(m),
                                      population_members.member_config(self.sections.config, m),
                                      self.sections.run.console_every_s if m.index == 0
                                      else float("inf"), m.name)
                         for m in self.members])

    def _logger(self, run_dir: str, config, console_every_s: float,
                member: str | None = None) -> MetricsLogger:
        """`member`: a population's member, logged as its own W&B run, named
        `<run name>/<member>`, in the group `wandb.group` or else the population's run dir's
        name."""
        wandb = dataclasses.asdict(self.sections.wandb)
        if member is not None:
            run_name = os.path.basename(os.path.normpath(self.run_dir))
            wandb.update(group=wandb["group"] or run_name,
                         name=f"{wandb['name'] or run_name}/{member}")
        return MetricsLogger(
            run_dir, self.plan.planned_env_steps(*self.done), console_every_s,
            enabled=distributed.is_main_process(),
            resume_step=self.progress.env_steps if self.progress else None,
            wandb_config=wandb if wandb["project"] else None,
            run_config=json.loads(config.to_json()))

    def checkpointer(self) -> checkpoint.Checkpointer:
        run = self.sections.run
        return checkpoint.Checkpointer(
            os.path.join(self.run_dir, "checkpoints"), every_updates=run.checkpoint_every_updates,
            every_minutes=run.checkpoint_every_minutes, keep=run.checkpoint_keep,
            metadata={"experiment": self.name, "env": self.sections.env.name,
                      "seed": self.sections.runtime.seed,
                      "config": json.loads(self.sections.config.to_json()),
                      "lr_horizon": self.horizon.to_dict()})

    def write_config(self) -> None:
        if not distributed.is_main_process():
            return
        with open(os.path.join(self.run_dir, "config.json"), "w") as f:
            f.write(self.sections.config.to_json(indent=2))
        for m in self.members or ():
            with open(os.path.join(self.member_dir(m), "config.json"), "w") as f:
                f.write(population_members.member_config(self.sections.config, m)
                        .to_json(indent=2))

    def write_summary(self, result, evaluator, diverged: dict | None = None,
                      **extra: Any) -> None:
        """summary.json of the run (`diverged`: where and why a single run stopped on
        non-finite updates); a population's also one per member (its own run, with its own
        `diverged`), and the run dir's lists the members and their aggregate."""
        if self.members is None:
            write_summary(self.run_dir, result, evaluator,
                          **({"diverged": diverged} if diverged else {}), **extra)
            return
        listing = []
        for m, member in zip(self.members, result.members or []):
            one = dataclasses.replace(result, episode_summary=member["episode_summary"],
                                      last_metrics=member["last_metrics"], members=None)
            mark = {"diverged": member["diverged"]} if member.get("diverged") else {}
            write_summary(self.member_dir(m), one, None, seed=m.seed,
                          settings=dict(m.settings), **mark, **extra)
            listing.append({"member": m.name, "seed": m.seed, "settings": dict(m.settings),
                            **mark, **member["episode_summary"]})
        # Not member 0's episode statistics: the population's, per member and aggregated.
        whole = dataclasses.replace(result, episode_summary={}, last_metrics={})
        write_summary(self.run_dir, whole, None, members=listing,
                      aggregate=members_aggregate(listing), **extra)


class _Loggers(list):
    """A population's loggers: closed together, as one logger is by `with`."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for logger in self:
            logger.close()
        return False


def exit_on_lost_peer(error: Exception, checkpointer) -> None:
    """One message naming the lost process and the newest checkpoint, then exit 1 (either
    runtime). No normal exit with a dead peer: jax.distributed's atexit shutdown would abort."""
    newest = (f" Newest checkpoint: {checkpointer.path(checkpointer.last_saved)}."
              if checkpointer is not None and checkpointer.last_saved is not None else "")
    distributed.exit_lost_peer(f"{error}{newest}")


def exit_now_if_abandoned(result, status: int) -> None:
    """After a second signal abandoned an update, ends the process at once: files are closed
    and checkpoints written, but a normal exit would wait for the abandoned computation."""
    if result.abandoned:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def exit_interrupted(error, session: Session, evaluator, main: bool, **extra: Any) -> None:
    """Ctrl-C (`error`: the runtime's `Interrupted`, either runtime): the same summary.json as
    SIGTERM, one line, exit 130 (at once if an update was abandoned)."""
    run_dir = session.run_dir
    if main:
        session.write_summary(error.result, evaluator, **extra)
    hint = f"; resume with --config.resume={run_dir}" if error.result.checkpoint else ""
    print(f"{error}{hint}.", flush=True)
    exit_now_if_abandoned(error.result, 130)
    raise SystemExit(130) from None


def members_aggregate(listing: list[dict]) -> dict:
    """The mean over the members that did not diverge of each episode statistic, labelled
    with its statistic (seeds and settings pooled: per setting, `scripts.sweep table`)."""
    kept = [m for m in listing if not m.get("diverged")]
    keys = sorted({k for m in kept for k in m if k.startswith("episode/")})
    out: dict[str, Any] = {
        "statistic": "mean over the members that did not diverge, seeds and settings pooled "
                     "(per setting: python -m scripts.sweep table <run_dir>)",
        "members": len(kept), "diverged": len(listing) - len(kept)}
    for k in keys:
        values = [float(m[k]) for m in kept
                  if isinstance(m.get(k), (int, float)) and np.isfinite(m[k])]
        out[k] = float(np.mean(values)) if values else None
    return out


def write_summary(run_dir: str, result, evaluator, **extra: Any) -> None:
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        # stopped_by tells a finished run from one stopped early by a signal (sweeps rerun those).
        json.dump({"env_steps": result.env_steps, "updates": result.updates,
                   "stopped_by": result.stopped_by, "checkpoint": result.checkpoint, **extra,
                   **result.episode_summary,
                   **(evaluator.last if evaluator is not None else {})}, f, indent=2)


def read(path: str, sections: Sections, name: str) -> checkpoint.Loaded:
    """The checkpoint to resume from, read whole before anything is built: of this
    experiment, with the population's members (experiments/wiring/members.py); fails naming
    what differs (a ConfigError). `path` is the newest checkpoint `resume` resolves to; a run
    dir or `checkpoints` dir in `resume` falls back past damaged newer checkpoints
    (podracer/checkpoint.py)."""
    source = sections.run.resume or path
    current = json.loads(sections.config.to_json())
    try:
        return checkpoint.read(
            source, experiment=name,
            check=lambda meta: population_members.check_same_members(meta.get("config", {}),
                                                                     current))
    except ValueError as e:  # damaged, another experiment, other members
        raise ConfigError(f"resume={source!r}: {e}") from e


def restore(loaded: checkpoint.Loaded, template, sections: Sections,
            run_dir: str) -> checkpoint.Progress:
    """The read checkpoint in `template`, the structure the agent starts from (a ConfigError
    naming what differs); the damaged newer checkpoints it skipped are moved aside in
    `run_dir`, because this run will save those update numbers again."""
    source = sections.run.resume or loaded.checkpoint
    try:
        progress = checkpoint.fit(loaded, template, config=json.loads(sections.config.to_json()))
    except ValueError as e:  # a tree that does not fit
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
    print(f"resuming from {progress.checkpoint} (update "
          f"{progress.updates:,d}, env step {progress.env_steps:,d}){where}", flush=True)
    return progress


def _template(agent, seed: int, example_obs):
    """The learner state's structure a fresh run of one agent starts from, as shapes."""
    return jax.eval_shape(agent.init, jax.random.key(seed), example_obs)
