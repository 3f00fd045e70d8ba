"""Periodic evaluation during training, for either runtime: every N updates, whole games are
played with that update's actor parameters in a background thread and logged as `eval/*`.

Where the games are played is the runtime's business: Sebulba plays an env batch on the host
(sebulba/evaluation.py `play`), Anakin compiles the games of its JAX env into one program
(anakin/evaluation.py). Both give this module the same function, `play(actor_params, seed,
should_stop) -> (returns, lengths)`, and the same statistics come out.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import jax
import numpy as np

# Training env seeds stay below 2**30 plus small per-actor/host offsets (runner.actor_seed);
# EnvPool needs int32 seeds, so evaluation starts high in the int32 range.
EVAL_SEED = 2**31 - 2**20

# (actor_params, seed, should_stop) -> (returns, lengths) of the configured number of games.
PlayFn = Callable[[Any, int, Callable[[], bool]], tuple[list[float], list[int]]]


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

    def __init__(self, *, play: PlayFn, actor_params: Callable, logger, every_updates: int,
                 episodes: int, seed: int = EVAL_SEED) -> None:
        """`play(actor_params, seed, should_stop)`: the runtime's game loop for `episodes`
        games (it stops early, with what finished, once `should_stop()`)."""
        self._play, self._actor_params, self._logger = play, actor_params, logger
        self.every, self.episodes, self._seed = every_updates, episodes, seed
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._failed = False
        self.completed = self.skipped = 0
        self.last: dict[str, float] = {}  # the newest evaluation's eval/* scalars

    def due(self, update: int) -> bool:
        """Whether `update` is an evaluation update (the loops end fused calls there)."""
        return not self._failed and update % self.every == 0

    def on_update(self, update: int, env_steps: int, state: Any) -> None:
        if not self.due(update):
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
            returns, lengths = self._play(ap, self._seed + update % 2**19, self._stop.is_set)
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
