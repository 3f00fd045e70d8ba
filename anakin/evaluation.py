"""Anakin's evaluation game loop: whole games of a JAX-native env, played on the device.

The games of an evaluation are compiled like training: `num_envs` envs (`vmap` of the env's
step) and the evaluation player (agents/evaluation.py `Player.step`, greedy or sampled) run
`chunk` steps per call in one `lax.scan`; the host only reads which games ended in the chunk,
with their returns, lengths and episode metrics (anakin/episode_metrics.py). The statistics are
Sebulba's host loop's (sebulba/evaluation.py `play`): env i plays a fixed quota of the games
(so short games are not over-represented), returns are the true sums of rewards, lengths count
the valid steps (the reset step after a game's end is not one), and a recurrent player's core
state is reset where a new game starts. Between chunks the host checks `should_stop` (a run's
end stops a running evaluation within one chunk).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from anakin import episode_metrics as game_metrics
from podracer.episode_metrics import EpisodeMetric

PyTree = Any


def make_play(env, player, episodes: int, num_envs: int, chunk: int = 256,
              metrics: Sequence[EpisodeMetric] = ()) -> Callable[
                  [Any, int, Callable[[], bool]],
                  tuple[list[float], list[int], dict[str, list[float]]]]:
    """`play(actor_params, seed, should_stop) -> (returns, lengths, values)` of `episodes`
    games of the JAX env `env` (anakin.envs, EnvPool's episode semantics) with `player` (an
    agents.evaluation.Player), compiled once for all evaluations of a run; `values` holds each
    of `metrics`' per-game values by name (as sebulba/evaluation.py `play`)."""
    metrics = tuple(metrics)
    n = max(1, min(num_envs, episodes))
    quota = np.array([episodes // n + (i < episodes % n) for i in range(n)])

    # Key streams as Sebulba's host loop draws them on the same env (sebulba/jax_host_env.py
    # and sebulba/evaluation.py `play`): per env, split(key(seed), n), each split again at
    # reset and at every step; the player's keys from key(seed), split once per step. So both
    # runtimes play the very same games of a JAX env (tests/anakin/test_evaluation.py).
    def start(seed):
        split = jax.vmap(jax.random.split)(jax.random.split(jax.random.key(seed), n))
        state = jax.vmap(env.reset)(split[:, 1])
        core = player.initial_state(n) if player.initial_state is not None else None
        return (state, split[:, 0], jax.random.key(seed), core, jnp.ones(n, bool),
                jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.int32),
                game_metrics.zeros(len(metrics), (n,)))

    def steps(ap, carry):
        def one(carry, _):
            state, env_keys, key, core, reset, ret, length, totals = carry
            key, k_act = jax.random.split(key)
            action, core = player.step(ap, state.obs, k_act, core,
                                       reset if core is not None else None)
            split = jax.vmap(jax.random.split)(env_keys)
            state, s = jax.vmap(env.step)(split[:, 1], state, action)
            ret = ret + s.reward
            length = length + s.valid.astype(jnp.int32)
            totals = jax.vmap(lambda t, info, valid: game_metrics.add(
                t, game_metrics.values(info, metrics), valid, metrics))(totals, s.info, s.valid)
            over = s.episode_over
            out = (over, ret, length, jax.vmap(game_metrics.result, (0, None))(totals, metrics))
            carry = (state, split[:, 0], key, core, ~s.valid, jnp.where(over, 0.0, ret),
                     jnp.where(over, 0, length), game_metrics.restart(totals, over[:, None]))
            return carry, out
        return jax.lax.scan(one, carry, None, length=chunk)

    start_fn, steps_fn = jax.jit(start), jax.jit(steps)

    def play(actor_params, seed: int, should_stop: Callable[[], bool] = lambda: False
             ) -> tuple[list[float], list[int], dict[str, list[float]]]:
        carry = start_fn(seed)
        done = np.zeros(n, np.int64)
        returns: list[float] = []
        lengths: list[int] = []
        values: dict[str, list[float]] = {m.name: [] for m in metrics}
        while (done < quota).any() and not should_stop():
            carry, out = steps_fn(actor_params, carry)
            over, ret, length, game = jax.device_get(out)
            for t, i in zip(*np.nonzero(over)):  # step-major: games in the order they ended
                if done[i] < quota[i]:
                    returns.append(float(ret[t, i]))
                    lengths.append(int(length[t, i]))
                    for j, m in enumerate(metrics):
                        values[m.name].append(float(game[t, i, j]))
                    done[i] += 1
        return returns, lengths, values

    return play
