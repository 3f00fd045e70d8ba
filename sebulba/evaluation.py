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

from podracer.episode_metrics import EpisodeAccumulator, EpisodeMetric
from sebulba import envs

EnvFactory = Callable[[int, int], Any]  # (num_envs, seed) -> env batch (sebulba/envs.py API)


def eval_env_config(config, noop_max: int | None = None,
                    max_episode_steps: int | None = None) -> envs.EnvConfig:
    """The run's env settings for evaluation: whole games (no episodic life). `config`: the
    run's EnvConfig, or an experiment ConfigDict (its `env` section)."""
    values = (dataclasses.asdict(config) if isinstance(config, envs.EnvConfig)
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
    ret, length = np.zeros(num_envs), np.zeros(num_envs, np.int64)
    done = np.zeros(num_envs, np.int64)
    prev_over = np.zeros(num_envs, bool)
    returns: list[float] = []
    lengths: list[int] = []
    values: dict[str, list[float]] = {m.name: [] for m in metrics}
    acc = EpisodeAccumulator(metrics, num_envs)
    obs = env.reset()
    try:
        while (done < quota).any() and not should_stop():
            key, sub = jax.random.split(key)
            ts = env.step(actor.act(obs, sub))
            actor.observe(ts.terminated, ts.truncated)
            ret += ts.reward
            length += ~prev_over  # the step after a game's end is EnvPool's reset step
            acc.update(ts.info, ~prev_over)
            for i in np.flatnonzero(ts.episode_over):
                game = acc.finish(i)
                if done[i] < quota[i]:
                    returns.append(float(ret[i]))
                    lengths.append(int(length[i]))
                    for m, v in zip(metrics, game):
                        values[m.name].append(v)
                    done[i] += 1
            ret[ts.episode_over], length[ts.episode_over] = 0.0, 0
            prev_over, obs = ts.episode_over, ts.obs
    finally:
        env.close()
    return returns, lengths, values
