"""Periodic evaluation during training, for either runtime: every N updates, whole games are
played with that update's actor parameters in a background thread and logged as `eval/*`; a
run ends with an evaluation of its final policy.

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

from podracer import signals
from podracer.episode_metrics import metric_means

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
    that update in a background thread and logs `eval/*` at that update's env step; at the
    run's end, the same for its final policy.

    The learner only waits for a host copy of the actor parameters (it must be taken before the
    next update donates the state); the games run beside training. If the previous evaluation
    is still playing, this one is skipped (never queue up behind slow games). An evaluation that
    fails prints a warning and turns evaluation off: it must not end a long training run.

    `warm_up(actor_params)` plays one step of the game loop in the background before the first
    evaluation, so that compiling it overlaps the training's own compilation: a short run's
    first evaluation is otherwise still compiling when the run ends (a gymnax CartPole run
    trains 47 updates in under a second after its first, and the evaluation's compile takes
    ~0.7 s on 2 cores). `final(update, env_steps, state)` (the loop's last update) keeps the
    final policy; `close()` waits for the evaluation in flight, then plays the final policy's
    games (unless that update was evaluated already), both within `wait_s` in all; what is not
    done by then is stopped, reported as cut short and not logged (partial games would be
    biased to short ones).
    """

    def __init__(self, *, play: PlayFn, actor_params: Callable, logger, every_updates: int,
                 episodes: int, seed: int = EVAL_SEED, wait_s: float = 120.0) -> None:
        """`play(actor_params, seed, should_stop)`: the runtime's game loop for `episodes`
        games (it stops early, with what finished, once `should_stop()`). `wait_s`: how long
        `close()` waits, in all, for the evaluation in flight and the final one."""
        self._play, self._actor_params, self._logger = play, actor_params, logger
        self.every, self.episodes, self._seed, self.wait_s = every_updates, episodes, seed, wait_s
        self._thread: threading.Thread | None = None
        self._warm: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()  # between a result's logging and close()
        self._closed = self._failed = False
        self._started_update: int | None = None  # the update of the newest evaluation started
        self._final: tuple[Any, int, int] | None = None  # (host actor params, update, steps)
        self.completed = self.skipped = self.cut_short = 0
        self.last: dict[str, float] = {}  # the newest evaluation's eval/* scalars

    def warm_up(self, actor_params: Any) -> None:
        """Compiles the game loop in the background: one step of it with `actor_params` (any
        parameters of the run's structure, e.g. the initial ones, or a function of no
        arguments that makes them there)."""
        def warm():
            try:
                # A host copy, as the evaluations get: the same compiled program.
                ap = _host_copy(actor_params() if callable(actor_params) else actor_params)
                answers = iter([False])  # play's loop asks before every chunk: one chunk only
                self._play(ap, self._seed, lambda: next(answers, True))
            except Exception as e:  # noqa: BLE001 - evaluation must not end training
                self._fail("warm-up", e)
        self._warm = threading.Thread(target=warm, name="evaluator-warm-up", daemon=True)
        self._warm.start()

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
        self._start(_host_copy(self._actor_params(state)), update, env_steps)

    def final(self, update: int, env_steps: int, state: Any) -> None:
        """Keeps the policy of the run's last update (`state`'s) for `close()` to evaluate,
        unless an evaluation of that update has already started."""
        if self._failed or self._started_update == update:
            return
        self._final = (_host_copy(self._actor_params(state)), update, env_steps)

    def _start(self, ap: Any, update: int, env_steps: int) -> None:
        self._started_update = update
        self._thread = threading.Thread(target=self._evaluate, args=(ap, update, env_steps),
                                        name="evaluator", daemon=True)
        self._thread.start()

    def _fail(self, what: str, error: Exception) -> None:
        self._failed = True
        print(f"WARNING: evaluation {what} failed ({error!r}); evaluation is off for the rest "
              f"of this run.", flush=True)

    def _evaluate(self, ap: Any, update: int, env_steps: int) -> None:
        if self._warm is not None:
            self._warm.join()  # the game loop's compilation, then the games
            if self._failed:
                return
        start = time.perf_counter()
        try:
            # (returns, lengths), and the episode metrics by name where the runtime has them.
            returns, lengths, *metrics = self._play(ap, self._seed + update % 2**19,
                                                    self._stop.is_set)
        except Exception as e:  # noqa: BLE001 - evaluation must not end training
            self._fail(f"at update {update}", e)
            return
        seconds = time.perf_counter() - start
        if len(returns) < self.episodes:  # stopped by close()
            self.cut_short += 1
            print(f"WARNING: evaluation at update {update} cut short at the run's end after "
                  f"{seconds:.0f}s ({len(returns)} of {self.episodes} games finished); not "
                  f"logged (raise eval_wait_s to wait longer).", flush=True)
            return
        stats = summarize(returns)
        scalars = {**{f"eval/return_{k}": v for k, v in stats.items()},
                   "eval/length_mean": float(np.mean(lengths)), "eval/episodes": len(returns),
                   "eval/update": update, "eval/seconds": seconds}
        means = metric_means(metrics[0] if metrics else {})
        scalars.update({f"eval/{name}": v for name, v in means.items()})
        with self._lock:
            if self._closed:  # close() gave up on this one: the files are closed
                return
            self.last = scalars
            self._logger.write(env_steps, scalars, console=False)
            self.completed += 1
        if self._logger.enabled:
            print(f"eval  update {update:,d} (env step {env_steps:,d}): {len(returns)} games, "
                  f"return mean {stats['mean']:.2f} (median {stats['median']:.2f}, min "
                  f"{stats['min']:.2f}, max {stats['max']:.2f})"
                  f"{''.join(f', {n} {v:.3g}' for n, v in means.items())} in {seconds:.0f}s",
                  flush=True)

    def close(self, wait_s: float | None = None) -> None:
        """Waits for the evaluation in flight, then evaluates the final policy (if `final`
        kept one), within `wait_s` (default: the constructor's) in all; stops what is left."""
        deadline = time.monotonic() + (self.wait_s if wait_s is None else wait_s)
        self._join(deadline)
        final, self._final = self._final, None
        if final is not None and not self._failed and self._started_update != final[1]:
            if self._stop.is_set():
                print(f"WARNING: the final policy (update {final[1]:,d}) was not evaluated: "
                      f"the evaluation before it was stopped (eval_wait_s, or a second "
                      f"Ctrl-C).", flush=True)
            else:
                self._start(*final)
                self._join(deadline)
        with self._lock:
            self._closed = True

    def _join(self, deadline: float) -> None:
        """Joins the running evaluation by `deadline`; past it, stops it (within a chunk of
        games) and gives it a few seconds more to say it was cut short."""
        thread = self._thread
        if thread is None:
            return
        thread.join(min(1.0, max(0.0, deadline - time.monotonic())))
        if thread.is_alive() and self._logger.enabled:  # a long one: say what the end waits for
            print(f"waiting up to {max(0.0, deadline - time.monotonic()):.0f}s for the "
                  f"evaluation at update {self._started_update:,d} (eval_wait_s; a second "
                  f"Ctrl-C stops waiting)", flush=True)
        # In slices: a second Ctrl-C (the loop's handler sets its flag) stops the waiting.
        while thread.is_alive() and time.monotonic() < deadline and not signals.urgent():
            thread.join(min(0.1, max(0.0, deadline - time.monotonic())))
        if thread.is_alive():
            self._stop.set()
            thread.join(5.0)
