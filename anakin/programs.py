"""What the Anakin host loop (anakin/loop.py) calls per update, for one agent or a population:
the compiled program (anakin/update_program.py, anakin/population.py), the state and env
runners it starts from, placed on the mesh, and the split of a call's metrics and finished
games into [update][member] rows."""
from __future__ import annotations

from typing import Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from anakin import actor, host_games, key_streams, topology, update_program
from anakin import population as pop
from podracer.agent import Agent
from podracer.checkpoint import Progress
from podracer.episode_metrics import EpisodeMetric


def steps_per_update(ac) -> int:
    """Env steps of one update over all processes (the run's plan; a curriculum's clock)."""
    return ac.plan(jax.process_count()).steps_per_update


def _filled(x: jax.Array, values: np.ndarray) -> jax.Array:
    """An array of x's shape and sharding holding `values` broadcast along its leading axes
    (every process builds its own shards: the values are the same on every process)."""
    full = np.broadcast_to(values, x.shape)
    return jax.make_array_from_callback(x.shape, x.sharding, lambda index: full[index])


class OneAgent:
    """One agent: today's compiled update, unbatched (its checkpoints and speed unchanged)."""

    def __init__(self, agent: Agent, env, ac, mesh: Mesh,
                 episode_metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.agent, self.env, self.ac, self.mesh = agent, env, ac, mesh
        self.num_metrics = len(episode_metrics)
        self.metric_names = tuple(m.name for m in episode_metrics)
        self.reads_progress = bool(getattr(env, "reads_progress", False))
        self.steps_per_update = steps_per_update(ac)
        self.program = update_program.make_update_fn(agent, env, mesh, ac.unroll_length,
                                                     ac.updates_per_call, episode_metrics,
                                                     self.steps_per_update)

    def init(self, example, start_update: int, resume: Progress | None):
        ac = self.ac
        state = (self.agent.init(key_streams.init_key(ac.seed), example) if resume is None
                 else resume.learner_state)
        runner = actor.init_runner(self.agent, self.env,
                                   key_streams.runner_key(ac.seed, start_update), ac.num_envs,
                                   self.num_metrics, start_update, self.steps_per_update,
                                   self.metric_names)
        return topology.place_replicated(state, self.mesh), topology.place_runner(runner, self.mesh)

    def with_recent(self, runner, recent: list[tuple]):
        """`runner` holding the logged games' summary (EpisodeStats.recent) a curriculum
        reads in the next call."""
        row = actor.recent_row(recent[0], self.num_metrics)
        return runner._replace(recent=_filled(runner.recent, row))

    def update(self, k: int, state, runner, active=None):
        if self.ac.updates_per_call == 1:
            return self.program(state, runner)
        return self.program(state, runner, n=k)

    def split(self, metrics: dict, eps, k: int) -> tuple[list[list[dict]], list[list[list]]]:
        """[update][member] metrics and games of a call of k updates."""
        if self.ac.updates_per_call == 1:
            return [[metrics]], [[g] for g in host_games.local_episodes(eps)]
        games = host_games.local_episodes(eps, k)  # rounds from k on were skipped
        rows = [{n: v[i] for n, v in metrics.items()} for i in range(k)]
        return [[m] for m in rows], [[g] for g in games]


class Members:
    """M members in one program (anakin/population.py)."""

    def __init__(self, population: pop.Population, env, ac, mesh: Mesh,
                 episode_metrics: Sequence[EpisodeMetric] = ()) -> None:
        self.population, self.env, self.ac, self.mesh = population, env, ac, mesh
        self.num_metrics = len(episode_metrics)
        self.metric_names = tuple(m.name for m in episode_metrics)
        self.reads_progress = bool(getattr(env, "reads_progress", False))
        self.hparams = population.stacked_hparams()
        self.steps_per_update = steps_per_update(ac)
        self.program = pop.make_update_fn(population, env, mesh, ac.unroll_length,
                                          ac.updates_per_call, episode_metrics,
                                          self.steps_per_update)

    def init(self, example, start_update: int, resume: Progress | None):
        states, runners = pop.init(self.population, self.env, example, start_update,
                                   self.ac.num_envs, self.num_metrics, self.steps_per_update,
                                   self.metric_names)
        if resume is not None:
            states = resume.learner_state
        return pop.place(states, runners, self.mesh)

    def with_recent(self, runners, recent: list[tuple]):
        """`runners` holding each member's logged games' summary (EpisodeStats.recent) a
        curriculum reads in the next call."""
        rows = np.stack([actor.recent_row(r, self.num_metrics) for r in recent])  # [M, 2+K]
        return runners._replace(recent=_filled(runners.recent, rows[:, None, :]))

    def update(self, k: int, states, runners, active=None):
        if self.ac.updates_per_call == 1:
            return self.program(self.hparams, states, runners, active=active)
        return self.program(self.hparams, states, runners, active=active, n=k)

    def split(self, metrics: dict, eps, k: int):
        size = self.population.size
        fused = self.ac.updates_per_call > 1
        games = pop.local_episodes(eps, size, k)  # rounds from k on were skipped
        stacked = metrics if fused else {n: np.asarray(v)[None] for n, v in metrics.items()}
        rows = [[{n: v[i][m] for n, v in stacked.items()} for m in range(size)]
                for i in range(k)]
        return rows, games
