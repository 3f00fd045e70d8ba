"""The acting side of the Anakin program, per device: T steps of the agent's `actor_step` and
the env's step under `lax.scan` (each env with its own key stream), building the same `Rollout`
the Sebulba actor threads build (sebulba/actor.py), and the record of the games that ended on
the way (`Episodes`, read on the host by anakin/host_games.py). `Runner` is the acting side's
carry from one update to the next.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from anakin import episode_metrics as game_metrics
from podracer.agent import Agent, Rollout, reset_core_state
from podracer.curriculum import TrainingProgress
from podracer.episode_metrics import EpisodeMetric

PyTree = Any


class Runner(NamedTuple):
    """The acting side's carry; every leaf has the env axis first (split over devices)."""

    env: PyTree          # anakin.envs.EnvState per env
    key: jax.Array       # per-env RNG key
    core: PyTree         # recurrent agents: core state per env (None otherwise)
    reset: jax.Array     # [B] the next step sees a new episode's first observation
    ep_return: jax.Array  # [B] true return of the running episode
    ep_length: jax.Array  # [B] valid steps of the running episode
    ep_metrics: game_metrics.Totals  # [B, M] env.episode_metrics of the running episode
    # [B] int32: updates done before this rollout, the same in every env (the training
    # progress a curriculum reads: podracer/curriculum.py)
    updates: jax.Array
    # [B, 2 + M] float32: the logged games' mean return, count and M metric means (the host
    # sets it before each call: `recent_row`), the same in every env; for a curriculum
    recent: jax.Array


class Episodes(NamedTuple):
    """Per step [T, B]: whether a game ended there, and its return, length and episode
    metrics ([T, B, M], env.episode_metrics) if so."""

    over: jax.Array
    ret: jax.Array
    length: jax.Array
    metrics: jax.Array | None = None  # None: no metrics (a record made by hand)


def init_runner(agent: Agent, env, key: jax.Array, num_envs: int, num_metrics: int = 0,
                start_update: int = 0, steps_per_update: int = 0,
                metric_names: Sequence[str] = ()) -> Runner:
    """`num_envs` fresh envs, each with its own key stream derived from `key`, with room for
    `num_metrics` episode metrics, `start_update` updates into training (a resume), an update
    being `steps_per_update` env steps over all processes (what a curriculum reads, with the
    metrics by `metric_names`: as many, when the env reads the progress)."""
    keys = jax.random.split(key, num_envs)
    split = jax.vmap(lambda k: jax.random.split(k))(keys)  # [B, 2]: reset key, stream key
    updates = jnp.full(num_envs, start_update, jnp.int32)
    recent = jnp.broadcast_to(jnp.asarray(recent_row((float("nan"), 0, {}), num_metrics)),
                              (num_envs, 2 + num_metrics))
    if getattr(env, "reads_progress", False):
        if len(metric_names) != num_metrics:
            raise ValueError(f"metric_names={tuple(metric_names)}: one name per metric "
                             f"({num_metrics}).")
        env_state = jax.vmap(lambda k, u, r: env.reset(
            k, _progress(u, steps_per_update, r, metric_names)))(split[:, 0], updates, recent)
    else:
        env_state = jax.vmap(env.reset)(split[:, 0])
    core = agent.initial_core_state(num_envs) if agent.recurrent else None
    zeros = jnp.zeros(num_envs, jnp.float32)
    return Runner(env_state, split[:, 1], core, jnp.ones(num_envs, bool), zeros,
                  jnp.zeros(num_envs, jnp.int32), game_metrics.zeros(num_metrics, (num_envs,)),
                  updates, recent)


def recent_row(recent: tuple, num_metrics: int) -> np.ndarray:
    """EpisodeStats.recent() (mean return, games, {name: mean}) as one runner row [2 + M]:
    the metrics in the run's order (NaN where missing)."""
    ret, games, means = recent
    values = list(means.values())[:num_metrics]
    values += [float("nan")] * (num_metrics - len(values))
    return np.asarray([ret, games, *values], np.float32)


def _progress(updates: jax.Array, steps_per_update: int, recent: jax.Array,
              names: Sequence[str]) -> TrainingProgress:
    """The training progress after `updates` updates of `steps_per_update` env steps each (in
    float32: exact to 2^24 steps, then to within 1e-7 of the count, plenty for a schedule),
    with a runner row of `recent` games (the metrics by `names`)."""
    if steps_per_update <= 0:
        raise ValueError(f"steps_per_update={steps_per_update}: the env reads the training "
                         f"progress (a curriculum); give the env steps of one update (> 0).")
    steps = updates.astype(jnp.float32) * steps_per_update
    return TrainingProgress(steps, updates, recent[0], recent[1].astype(jnp.int32),
                            {n: recent[2 + i] for i, n in enumerate(names)})


def _act_one(agent: Agent, params, obs, key, core):
    """The agent's batched actor_step on a batch of one env (vmapped over envs)."""
    obs1 = jax.tree.map(lambda x: x[None], obs)
    if core is None:
        action, extras = agent.actor_step(params, obs1, key)
        new_core = None
    else:
        action, extras, new_core = agent.actor_step(
            params, obs1, key, jax.tree.map(lambda x: x[None], core))
        new_core = jax.tree.map(lambda x: x[0], new_core)
    first = lambda t: jax.tree.map(lambda x: x[0], t)  # noqa: E731
    return first(action), first(extras), new_core


def rollout(agent: Agent, env, actor_params, runner: Runner, T: int,
            metrics: Sequence[EpisodeMetric] = (), steps_per_update: int = 0
            ) -> tuple[Runner, Rollout, Episodes]:
    """T steps of every env in `runner` (one device's share): the next carry (one update
    further), the Rollout the Sebulba actors would have built, and the finished games with
    their `metrics` (reduced here, on the device: anakin/episode_metrics.py; `runner` made for
    as many). An env that reads the training progress (a curriculum) gets the runner's, an
    update being `steps_per_update` env steps over all processes."""
    reads_progress = getattr(env, "reads_progress", False)
    initial = agent.initial_core_state(1) if agent.recurrent else None
    initial = jax.tree.map(lambda x: x[0], initial) if initial is not None else None

    names = tuple(m.name for m in metrics)

    def one_env(env_state, key, core, reset, ep_ret, ep_len, totals, updates, recent):
        key, k_act, k_env = jax.random.split(key, 3)
        if core is not None:
            core = reset_core_state(jax.tree.map(lambda x: x[None], core), reset[None],
                                    jax.tree.map(lambda x: x[None], initial))
            core = jax.tree.map(lambda x: x[0], core)
        action, extras, new_core = _act_one(agent, actor_params, env_state.obs, k_act, core)
        new_env, step = (env.step(k_env, env_state, action,
                                  _progress(updates, steps_per_update, recent, names))
                         if reads_progress else env.step(k_env, env_state, action))
        ep_ret = ep_ret + step.reward
        ep_len = ep_len + step.valid.astype(jnp.int32)
        totals = game_metrics.add(totals, game_metrics.values(step.info, metrics), step.valid,
                                  metrics)
        over = step.episode_over
        # The step goes out without its info (the T steps would otherwise keep every field).
        out = (env_state.obs, action, extras, step._replace(info=None),
               Episodes(over, ep_ret, ep_len, game_metrics.result(totals, metrics)))
        carry = (new_env, key, new_core, ~step.valid, jnp.where(over, 0.0, ep_ret),
                 jnp.where(over, 0, ep_len), game_metrics.restart(totals, over), updates,
                 recent)
        return carry, out

    def body(r: Runner, _):
        carry, out = jax.vmap(one_env)(*r)
        return Runner(*carry), out

    core_state = None
    if runner.core is not None:  # the state step 0 acts from (after its resets): [1, B, ...]
        core_state = reset_core_state(runner.core, runner.reset,
                                      agent.initial_core_state(runner.reset.shape[0]))
        core_state = jax.tree.map(lambda x: x[None], core_state)
    runner, (obs, action, extras, step, episodes) = jax.lax.scan(
        body, runner, None, length=T)
    runner = runner._replace(updates=runner.updates + 1)
    last_obs = jax.tree.map(lambda x: x[None], runner.env.obs)
    ro = Rollout(obs=jax.tree.map(lambda a, b: jnp.concatenate([a, b]), obs, last_obs),
                 action=action, reward=step.reward, terminated=step.terminated,
                 truncated=step.truncated, valid=step.valid, extras=extras,
                 core_state=core_state)
    return runner, ro, episodes
