"""The runtimes a config can run on, as the wiring sees them: one `Driver` each
(experiments/wiring/drivers/sebulba.py, anakin.py; sections.DRIVERS maps `config.runtime` to
them).

A driver is what differs between the runtimes in a run; everything else (reading the other
sections, building the network and agent, the session, the evaluation hook, the exits) is
written once, in run.py and its helpers. A driver reads its own section of the config,
checks what only it can (the env name, the device ids), and, once the run has joined its
multi-host job, `start`s: builds its devices and probes its env once, and hands back what the
run needs (`Started`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol

from podracer.batch import BatchShape, UpdatePlan

# (actor_params, seed, should_stop) -> (returns, lengths): a runtime's evaluation game loop.
PlayFn = Callable[[Any, int, Callable[[], bool]], tuple[list[float], list[int]]]


@dataclasses.dataclass(frozen=True)
class RuntimeSection:
    """A runtime's reading of the config, before anything joins (`Driver.read`)."""

    section: Any                      # the runtime's own section (its layout resolved)
    env: Any                          # the env section as it will run (the runtime's own
                                      # reading: a podracer.env_config.EnvSection)
    layout: Any = None                # Sebulba: the resolved layout (sebulba.layout.Layout)
    # Dotted config fields the runtime resolved, with the value that runs (an auto layout's
    # threads): the run's recorded config (`Sections.config`) holds these, the caller's
    # ConfigDict is left as it was given.
    resolved: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Started:
    """A runtime ready to train, after the join: built once per run."""

    action_space: Any                 # of one env (gymnasium space): picks the policy head
    example_obs: Any                  # one observation batch (leading axis of any size)
    shape: BatchShape                 # the batch the agent is built for (processes joined)
    plan: UpdatePlan                  # the run's update counts
    describe: tuple[str, ...]         # the layout lines printed at start
    # train(agent, logger, **kwargs) -> podracer.results.TrainResult (checkpointer, resume,
    # on_update, and the runtime's own keyword arguments).
    train: Callable[..., Any]
    # play_for(player, run_config) -> PlayFn: the runtime's game loop for evaluation.
    play_for: Callable[[Any, Any], PlayFn]
    # check(agent): what only tracing the agent on this runtime can find (a ConfigError), run
    # before any file of the run is written.
    check: Callable[[Any], None] = lambda agent: None
    observation_space: Any = None     # of one env (gymnasium space): the auto torso embeds
                                      # its Discrete leaves
    # build(network, horizon) -> the agent the run trains, when it is not the one agent
    # experiments/wiring/build.py builds (Anakin's population: several in one program).
    build: Callable[[Any, Any], Any] | None = None
    # template(agent, seed, example_obs) -> the learner state's shapes a fresh run starts from
    # (a checkpoint is fitted into them); None: `agent.init`'s.
    template: Callable[[Any, int, Any], Any] | None = None


class Driver(Protocol):
    name: str
    takes_host_envs: bool             # accepts a user make_env / wrap_env (host env batches)

    def read(self, config) -> RuntimeSection:
        """The runtime's section and its env section as they will run, from `config` (left
        unchanged); a ConfigError naming the field for a bad value."""

    def read_members(self, config, section, agent_config, run) -> list | None:
        """The members of a population (several agents in one program), or None for one; a
        ConfigError for a population this runtime cannot run."""

    def check_env(self, env, joins_a_job: bool) -> None:
        """A ConfigError naming env.name unless this runtime can make it."""

    def check_devices(self, section) -> None:
        """A ConfigError naming the device ids unless this host has them (queries devices:
        never before a multi-host join)."""

    def start(self, sections, make_env, wrap_env) -> Started:
        """After the join: the runtime's devices, its env probed once, its train and play."""
