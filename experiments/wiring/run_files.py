"""The files of a run, on either runtime (experiments/wiring/run.py): the run dir, the logger
(a population's: one per member, each in its own run dir), the checkpointer, config.json and
summary.json, written from the sections (`Sections.config` is the config as it runs), in the
run dir the session chose (session.py)."""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import numpy as np

from experiments.wiring import members
from podracer import checkpoint, distributed
from podracer.logging import MetricsLogger


class RunFiles:
    """The files of a built run (`session`: experiments/wiring/session.py's Session, whose run
    dir, update plan, counters before this session, restored progress and learning-rate
    horizon they record)."""

    def __init__(self, session) -> None:
        self.sections, self.name, self.run_dir = session.sections, session.name, session.run_dir
        self.plan, self.done, self.progress = session.plan, session.done, session.progress
        self.horizon, self.members = session.horizon, session.members

    def member_dir(self, member) -> str:
        return os.path.join(self.run_dir, "members", member.name)

    def logger(self) -> MetricsLogger | _Loggers:
        """The run's logger; a population's: one per member, each in its own run dir (member
        0 prints the console lines; every member prints its last)."""
        if self.members is None:
            return self._logger(self.run_dir, self.sections.config,
                                self.sections.run.console_every_s)
        return _Loggers([self._logger(self.member_dir(m),
                                      members.member_config(self.sections.config, m),
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
                      "config": self.sections.recorded(),
                      "lr_horizon": self.horizon.to_dict()})

    def write_config(self) -> None:
        if not distributed.is_main_process():
            return
        with open(os.path.join(self.run_dir, "config.json"), "w") as f:
            f.write(self.sections.config.to_json(indent=2))
        for m in self.members or ():
            with open(os.path.join(self.member_dir(m), "config.json"), "w") as f:
                f.write(members.member_config(self.sections.config, m)
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
