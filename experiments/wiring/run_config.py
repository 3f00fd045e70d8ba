"""The run section of an experiment config (`RunConfig`, top-level fields): which agent and
runtime, where files go, checkpoints, evaluation and the console. Read like every section by
podracer.schema.read_section; docs/architecture.md lists the others and where each lives."""
from __future__ import annotations

import dataclasses
from typing import Any

from agents.evaluation import EVAL_POLICIES
from podracer import scenarios
from podracer.validation import one_of

RUNTIMES = ("sebulba", "anakin")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Run-level settings: which agent, where files go, checkpoints, evaluation, console."""

    agent_name: str = ""               # a registered agent (agents.get_agent); "" = the entry
                                       # point's own (impala_atari.py: impala, ppo_*.py: ppo)
    runtime: str = "sebulba"           # sebulba (EnvPool actors + learner) | anakin (JAX envs,
                                       # docs/anakin.md)
    run_dir: str = ""                  # "" = runs/<experiment>-<env>-s<seed>-<time>
    resume: str = ""                   # run dir or checkpoint dir to continue ("" = fresh run)
    checkpoint_every_updates: int = 0  # checkpoint every N updates (0 = off); also at the end
    checkpoint_every_minutes: float = 10.0  # ... and every M minutes (0 = off);
                                       # docs/checkpoints.md
    checkpoint_keep: int = 3           # newest checkpoints kept in <run_dir>/checkpoints (0 = none)
    eval_every_updates: int = 0        # every N updates, play eval_episodes whole games in the
                                       # background and log eval/* (0 = off); docs/checkpoints.md
    eval_episodes: int = 10            # games per evaluation (true scores, no episodic life)
    eval_num_envs: int = 8             # parallel envs of an evaluation
    eval_policy: str = "greedy"        # greedy (the distribution's mode) | sample
    eval_randomize: str = ""           # held-out scenarios for periodic evaluation: an
                                       # env.randomize of the run's env ("none" = the fixed
                                       # env.options; "" = training's); docs/howto_env.md
    eval_wait_s: float = 120.0         # at the run's end, seconds to wait in all for the
                                       # evaluation in flight and the final policy's
    console_every_s: float = 10.0      # seconds between console progress lines

    def __post_init__(self) -> None:
        one_of("runtime", self.runtime, RUNTIMES, "a runtime")
        one_of("eval_policy", self.eval_policy, EVAL_POLICIES, "an evaluation policy")
        for name in ("checkpoint_every_updates", "checkpoint_keep", "eval_every_updates"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a non-negative "
                                 f"integer.")
        for name in ("console_every_s", "checkpoint_every_minutes", "eval_wait_s"):
            value = getattr(self, name)
            if not value >= 0 or value == float("inf"):
                raise ValueError(f"{name}={value!r} must be a non-negative number.")
        if self.eval_randomize != scenarios.NONE:
            try:
                scenarios.parse(self.eval_randomize)
            except ValueError as e:
                raise ValueError(f"eval_randomize={self.eval_randomize!r}: {e}") from None
        for name in ("eval_episodes", "eval_num_envs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be an integer >= 1.")


def evaluation_env(env: Any, run: RunConfig) -> Any:
    """The env settings (an env section) periodic evaluation plays: `env`'s, with
    run.eval_randomize's scenarios (podracer/scenarios.py) and the episode metrics they
    report."""
    return scenarios.held_out(env, run.eval_randomize)
