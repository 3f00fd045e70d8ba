"""The agent a run trains, on either runtime, once its network exists
(experiments/wiring/run.py): the checkpoint read before the agent is built, the agent built
once for the run's learning-rate horizon (re-stretched on resume), the checkpoint fitted into
it. The run's files are run_files.py's; the process's exits, exits.py's."""
from __future__ import annotations

import datetime
import os

import jax

from agents import schedules
from experiments.wiring import members as population_members
from experiments.wiring.build import build_agent
from experiments.wiring.drivers.protocol import Started
from experiments.wiring.sections import Sections
from podracer import checkpoint, distributed
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
    """What both runtimes do alike once the network exists: the run dir, the agent for the
    run's horizon (re-stretched on resume) and the restore. It reads the config only through
    `sections`."""

    def __init__(self, sections: Sections, name: str, network, started: Started) -> None:
        """`started`: the runtime after joining (its batch and update counts, its example
        observation, and how it builds the agent and its state's template)."""
        self.sections, self.name, self.network, self.started = sections, name, network, started
        self.shape, self.plan = started.shape, started.plan
        self.members = sections.members  # several agents in one program, or None
        resume_from = checkpoint.resolve(sections.run.resume) if sections.run.resume else None
        self.run_dir = make_run_dir(sections, name, resume_from)
        self.progress: checkpoint.Progress | None = None
        self.done = (0, 0)  # (updates, env steps) before this session
        self.horizon = schedules.Horizon(self.plan.num_updates)
        loaded = read(resume_from, sections, name) if resume_from else None
        if loaded is not None:  # the checkpoint's counters before the agent is built
            self.done = (loaded.updates, loaded.env_steps)
            # The same horizon keeps the checkpoint's schedule exactly; another re-stretches it
            # from the checkpoint's rate (agents/schedules.py, docs/checkpoints.md).
            self.horizon = schedules.resumed_horizon(
                schedules.trained_horizon(loaded.metadata), loaded.updates,
                self.plan.planned_updates(*self.done))
        self.agent = self._build()  # once, for the run's horizon
        if loaded is not None:
            of = started.template or _template  # a population's comes from its driver
            template = of(self.agent, sections.runtime.seed, started.example_obs)
            self.progress = restore(loaded, template, sections, self.run_dir)

    def _build(self):
        """The agent for the run's horizon: the runtime's (a population), or the one agent."""
        if self.started.build is not None:
            return self.started.build(self.network, self.horizon)
        return build_agent(self.sections, self.network, self.horizon, self.shape)


def read(path: str, sections: Sections, name: str) -> checkpoint.Loaded:
    """The checkpoint to resume from, read whole before anything is built: of this
    experiment, with the population's members (experiments/wiring/members.py); fails naming
    what differs (a ConfigError). `path` is the newest checkpoint `resume` resolves to; a run
    dir or `checkpoints` dir in `resume` falls back past damaged newer checkpoints
    (podracer/checkpoint.py)."""
    source = sections.run.resume or path
    current = sections.recorded()
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
        progress = checkpoint.fit(loaded, template, config=sections.recorded())
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
