"""The games an Anakin call finished, read on the host: the record the compiled program
returns (anakin/actor.py `Episodes`: per step, which envs ended a game, its return, length and
episode metrics) as this process's (return, length, *metrics) tuples, update by update, and
every process's games of a call gathered on every process (`gather_games`), for the loop's
episode statistics (anakin/loop.py, population.py). Sebulba's actors count their games on the
host instead (sebulba/actor_pools.py `EpisodeCounter`)."""
from __future__ import annotations

import jax
import numpy as np

from anakin.actor import Episodes
from podracer import distributed


def host_episodes(episodes: Episodes, rounds: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """This process's part of a finished-games record as host arrays (over, return, length,
    metrics), whatever leading axes it has; the env axis is the last one of the first three
    (metrics: [..., B, M]; [..., B, 0] for a record without). `rounds`: keep only the first
    `rounds` entries of the leading (round) axis of a fused call's record. On an accelerator
    they are sliced on the device, so the rounds a call skipped never cross to the host; on
    the CPU the copy is a view and slicing after it costs nothing."""
    if episodes.metrics is None:
        episodes = episodes._replace(metrics=np.zeros((*np.shape(episodes.over), 0), np.float32))

    def take(x):
        if rounds is None:
            return np.asarray(x)
        if isinstance(x, jax.Array) and _on_accelerator(x):
            return np.asarray(x[:rounds])
        return np.asarray(x)[:rounds]

    def local(x, env_axis):
        if jax.process_count() == 1 or not isinstance(x, jax.Array):
            return take(x)
        shards = sorted(x.addressable_shards, key=lambda s: s.index[env_axis].start or 0)
        return np.concatenate([take(s.data) for s in shards], axis=env_axis)
    env_axis = episodes.over.ndim - 1
    over, ret, length = (local(x, env_axis) for x in episodes[:3])
    return over, ret, length, local(episodes.metrics, env_axis)


def _on_accelerator(x: jax.Array) -> bool:
    return any(d.platform != "cpu" for d in x.devices())


def games(over: np.ndarray, ret: np.ndarray, length: np.ndarray,
          metrics: np.ndarray | None = None) -> list[tuple]:
    """(return, length, *metrics) of the games a [T, B] record marks as ended, step by step
    (`metrics`: [T, B, M] of the episode metrics)."""
    idx = np.nonzero(over)
    rows = metrics[idx].tolist() if metrics is not None else [()] * len(idx[0])
    return [(float(a), int(b), *(float(v) for v in m))
            for a, b, m in zip(ret[idx], length[idx], rows)]


def local_episodes(episodes: Episodes, rounds: int | None = None
                   ) -> list[list[tuple]]:
    """(return, length, *metrics) of the games this process's envs finished (host side), one
    list per update: from one update's record ([T, B]) or a fused call's ([K, T, B]), in order.
    `rounds`: only a fused call's first rounds (those it ran; the rest are zeros, and
    reading them cost ~7 ms per call for 16 seeds in a 64-round program)."""
    return [games(*update) for update in zip(*host_rounds(episodes, rounds, 2))]


def host_rounds(episodes: Episodes, rounds: int | None, round_ndim: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """host_episodes with a leading round axis whatever the call: a record of `round_ndim`
    axes is one update's (one round, the axis added); a longer one is a fused call's, of
    which the first `rounds` rounds are kept."""
    if episodes.over.ndim == round_ndim:
        return tuple(x[None] for x in host_episodes(episodes))
    return host_episodes(episodes, rounds)


def gather_games(games: list[list[list[tuple]]], steps: int, num_metrics: int = 0
                 ) -> list[list[list[tuple]]]:
    """Every process's games of a call ([update][member] lists of (return, length,
    *metrics)), on every process, in one exchange (podracer.distributed); `steps` bounds one
    list (a step ends at most one game per env)."""
    flat = [g for per_member in games for g in per_member]
    every = iter(distributed.gather_episode_groups(flat, steps, num_metrics))
    return [[next(every) for _ in per_member] for per_member in games]
