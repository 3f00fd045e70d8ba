"""Evaluation: whole games with true scores, for scripts/evaluate.py and, every N updates, in
the background of a training run (`config.eval_every_updates`).

Games are whole (no episodic life), rewards are the env's own (the runtime never clips), with
the run's sticky actions and time limit (Machado et al. 2018), on env seeds disjoint from
training. The player is any object with `act(obs, key) -> actions` and `observe(terminated,
truncated)` (agents.evaluation.EvalActor: greedy or sampled, recurrent agents carry their core
state), built by the caller: this module knows no algorithm.
"""
from __future__ import annotations

import dataclasses

import threading
import time
from typing import Any, Callable

import jax
import numpy as np

from sebulba import envs

# Training env seeds stay below 2**30 plus small per-actor/host offsets (runner.actor_seed);
# EnvPool needs int32 seeds, so evaluation starts high in the int32 range.
EVAL_SEED = 2**31 - 2**20

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
         seed: int, should_stop: Callable[[], bool] = lambda: False
         ) -> tuple[list[float], list[int]]:
    """(returns, lengths) of `episodes` games; env i plays a fixed quota of them, so short games
    are not over-represented. Stops early (with what finished) once `should_stop()`."""
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
    obs = env.reset()
    try:
        while (done < quota).any() and not should_stop():
            key, sub = jax.random.split(key)
            ts = env.step(actor.act(obs, sub))
            actor.observe(ts.terminated, ts.truncated)
            ret += ts.reward
            length += ~prev_over  # the step after a game's end is EnvPool's reset step
            for i in np.flatnonzero(ts.episode_over):
                if done[i] < quota[i]:
                    returns.append(float(ret[i]))
                    lengths.append(int(length[i]))
                    done[i] += 1
            ret[ts.episode_over], length[ts.episode_over] = 0.0, 0
            prev_over, obs = ts.episode_over, ts.obs
    finally:
        env.close()
    return returns, lengths


def summarize(returns: list[float]) -> dict[str, float]:
    r = np.asarray(returns, np.float64)
    return {"mean": float(r.mean()), "median": float(np.median(r)), "std": float(r.std()),
            "min": float(r.min()), "max": float(r.max())}


def _host_copy(tree: Any) -> Any:
    """A host copy of (replicated, possibly multi-process) arrays: one local shard each."""
    return jax.device_get(jax.tree.map(
        lambda x: x.addressable_data(0) if isinstance(x, jax.Array) else x, tree))


class PeriodicEvaluator:
    """Every `every_updates` updates, plays `episodes` whole games with the actor parameters of
    that update in a background thread and logs `eval/*` at that update's env step.

    The learner only waits for a host copy of the actor parameters (it must be taken before the
    next update donates the state); the games run beside training. If the previous evaluation
    is still playing, this one is skipped (never queue up behind slow games). An evaluation that
    fails prints a warning and turns evaluation off: it must not end a long training run.
    `close()` stops a running evaluation (its partial games are not logged) and joins it.
    """

    def __init__(self, *, new_actor: Callable[[Any, int], Any], actor_params: Callable,
                 make_env: EnvFactory, logger, every_updates: int, episodes: int,
                 num_envs: int, seed: int = EVAL_SEED) -> None:
        self._new_actor, self._actor_params = new_actor, actor_params
        self._make_env, self._logger = make_env, logger
        self.every, self.episodes, self.num_envs, self._seed = (
            every_updates, episodes, num_envs, seed)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._failed = False
        self.completed = self.skipped = 0
        self.last: dict[str, float] = {}  # the newest evaluation's eval/* scalars

    def on_update(self, update: int, env_steps: int, state: Any) -> None:
        if self._failed or update % self.every != 0:
            return
        if self._thread is not None and self._thread.is_alive():
            self.skipped += 1
            if self.skipped == 1:
                print(f"WARNING: evaluation at update {update} skipped: the previous one is "
                      f"still playing (raise eval_every_updates or lower eval_episodes).",
                      flush=True)
            return
        ap = _host_copy(self._actor_params(state))
        self._thread = threading.Thread(target=self._evaluate, args=(ap, update, env_steps),
                                        name="evaluator", daemon=True)
        self._thread.start()

    def _evaluate(self, ap: Any, update: int, env_steps: int) -> None:
        start = time.perf_counter()
        try:
            returns, lengths = play(lambda n: self._new_actor(ap, n), self._make_env,
                                    self.episodes, self.num_envs, self._seed + update % 2**19,
                                    self._stop.is_set)
        except Exception as e:  # noqa: BLE001 - evaluation must not end training
            self._failed = True
            print(f"WARNING: evaluation at update {update} failed ({e!r}); evaluation is off "
                  f"for the rest of this run.", flush=True)
            return
        if len(returns) < self.episodes:
            return  # stopped by close(): partial results would be biased to short games
        stats = summarize(returns)
        seconds = time.perf_counter() - start
        self.last = {**{f"eval/return_{k}": v for k, v in stats.items()},
                     "eval/length_mean": float(np.mean(lengths)), "eval/episodes": len(returns),
                     "eval/update": update, "eval/seconds": seconds}
        self._logger.write(env_steps, self.last, console=False)
        if self._logger.enabled:
            print(f"eval  update {update:,d} (env step {env_steps:,d}): {len(returns)} games, "
                  f"return mean {stats['mean']:.2f} (median {stats['median']:.2f}, min "
                  f"{stats['min']:.2f}, max {stats['max']:.2f}) in {seconds:.0f}s", flush=True)
        self.completed += 1

    def close(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
