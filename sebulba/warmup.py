"""Compiling the learner while the actors start, so the first update does not wait for it.

The learner's program depends only on shapes: `abstract_rollout` derives the shape, dtype and
sharding of every rollout field from the agent's own `actor_step` (evaluated abstractly, no
FLOPs), and `compile_learner` lowers and compiles the learn step for them in a background
thread while the actor threads build their envs and compile the policy. JAX keeps the compiled
program in memory, so the learner's first real call finds it (tests/slow/sebulba/test_warmup.py
checks that no compilation happens then). Were a spec ever to differ from a real rollout, the
first call would simply compile as before: warming up can cost time, never correctness.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp

from podracer.agent import Agent, PyTree, Rollout


def abstract_rollout(agent: Agent, actor_params: PyTree, example_obs: PyTree, T: int, B: int,
                     sharding) -> Rollout:
    """ShapeDtypeStructs of one actor thread's Rollout ([T(+1), B, ...], split by `sharding`).

    `example_obs` is one observation batch as the env returns it (any leading size)."""
    obs = jax.tree.map(lambda x: jax.ShapeDtypeStruct((B,) + x.shape[1:], jnp.asarray(x).dtype),
                       example_obs)
    key = jax.eval_shape(lambda: jax.random.key(0))
    core = None
    if agent.recurrent:
        core = jax.eval_shape(lambda: agent.initial_core_state(B))
        action, extras, _ = jax.eval_shape(agent.actor_step, actor_params, obs, key, core)
    else:
        action, extras = jax.eval_shape(agent.actor_step, actor_params, obs, key)

    def timed(n: int) -> Callable[[Any], jax.ShapeDtypeStruct]:
        return lambda x: jax.ShapeDtypeStruct((n,) + tuple(x.shape), x.dtype, sharding=sharding)

    flag = jax.ShapeDtypeStruct((B,), jnp.bool_)
    return Rollout(
        obs=jax.tree.map(timed(T + 1), obs), action=jax.tree.map(timed(T), action),
        reward=timed(T)(jax.ShapeDtypeStruct((B,), jnp.float32)),
        terminated=timed(T)(flag), truncated=timed(T)(flag), valid=timed(T)(flag),
        extras=jax.tree.map(timed(T), extras),
        core_state=None if core is None else jax.tree.map(timed(1), core))


class BackgroundCompile(threading.Thread):
    """Compiles `fn` for `args` (arrays or ShapeDtypeStructs) in a daemon thread; prints when
    it starts and how long it took, so a long compile is never a silent minute."""

    def __init__(self, what: str, fn, *args: Any, announce: bool = True) -> None:
        super().__init__(name=f"compile-{what}", daemon=True)
        self.what, self._fn, self._args, self._announce = what, fn, args, announce
        self.seconds: float | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        start = time.perf_counter()
        if self._announce:
            print(f"compiling the {self.what} ...", flush=True)
        try:
            self._fn.lower(*self._args).compile()
        except Exception as e:  # noqa: BLE001 - the real call compiles (and fails) again
            self.error = e
            if self._announce:
                print(f"WARNING: compiling the {self.what} ahead of time failed ({e!r}); it "
                      f"compiles at its first call instead.", flush=True)
            return
        self.seconds = time.perf_counter() - start
        if self._announce:
            print(f"{self.what} compiled in {self.seconds:.1f}s", flush=True)
