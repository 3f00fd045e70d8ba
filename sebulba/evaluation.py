"""Sebulba's evaluation game loop: whole games with true scores on a host env batch, for
scripts/evaluate.py and, every N updates, for the background evaluator of a training run
(podracer/evaluation.py, `config.eval_every_updates`).

Games are whole (no episodic life), rewards are the env's own (the runtime never clips), with
the run's sticky actions and time limit (Machado et al. 2018), on env seeds disjoint from
training. The player is any object with `act(obs, key) -> actions` and `observe(terminated,
truncated)` (agents.evaluation.EvalActor: greedy or sampled, recurrent agents carry their core
state), built by the caller: this module knows no algorithm.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import jax
import numpy as np

from podracer.episode_metrics import EpisodeMetric
from sebulba import envs
from sebulba.actor_pools import EpisodeCounter

EnvFactory = Callable[[int, int], Any]  # (num_envs, seed) -> env batch (sebulba/envs.py API)


def eval_env_config(config, noop_max: int | None = None,
                    max_episode_steps: int | None = None) -> envs.EnvConfig:
    """The run's env settings for evaluation: whole games (no episodic life). `config`: the
    run's env section (an EnvConfig, or an Anakin run's podracer.env_config.EnvSection, the
    other fields at their defaults), or an experiment ConfigDict (its `env` section)."""
    values = (dataclasses.asdict(config) if dataclasses.is_dataclass(config)
              else config.env.to_dict())
    values["episodic_life"] = False
    if noop_max is not None:
        values["noop_max"] = noop_max
    if max_episode_steps is not None:
        values["max_episode_steps"] = max_episode_steps
    return envs.EnvConfig(**values)


def play(new_actor: Callable[[int], Any], make_env: EnvFactory, episodes: int, num_envs: int,
         seed: int, should_stop: Callable[[], bool] = lambda: False,
         metrics: Sequence[EpisodeMetric] = ()
         ) -> tuple[list[float], list[int], dict[str, list[float]]]:
    """(returns, lengths, each of `metrics`' values by name) of `episodes` games; env i plays a
    fixed quota of them, so short games are not over-represented. Stops early (with what
    finished) once `should_stop()`."""
    num_envs = max(1, min(num_envs, episodes))
    quota = np.array([episodes // num_envs + (i < episodes % num_envs) for i in range(num_envs)])
    env = make_env(num_envs, seed)
    key = jax.random.key(seed)
    actor = new_actor(num_envs)
    # The actors' counter: the same game boundaries, lengths and metrics as training's.
    counter = EpisodeCounter(num_envs, metrics)
    done = np.zeros(num_envs, np.int64)
    prev_over = np.zeros(num_envs, bool)
    games: list[tuple] = []
    obs = env.reset()
    try:
        while (done < quota).any() and not should_stop():
            key, sub = jax.random.split(key)
            ts = env.step(actor.act(obs, sub))
            actor.observe(ts.terminated, ts.truncated)
            ended: list[tuple] = []
            # The step after a game's end is EnvPool's reset step: no game's.
            counter.update(ts, ~prev_over, ended)
            for i, game in zip(np.flatnonzero(ts.episode_over), ended):
                if done[i] < quota[i]:
                    games.append(game)
                    done[i] += 1
            prev_over, obs = ts.episode_over, ts.obs
    finally:
        env.close()
    values = {m.name: [g[2 + j] for g in games] for j, m in enumerate(metrics)}
    return [g[0] for g in games], [g[1] for g in games], values
