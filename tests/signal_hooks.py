"""What the signal-test drivers of both runtimes share (tests/programs/sebulba_signals.py,
tests/programs/anakin_signals.py): an agent whose update AT_UPDATE is slow, or stuck in C, and an
on_update hook that sends signals while that update runs."""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np

from tests.helpers import agent_with


def slow_update(at_update: int, stuck: bool = False, agent: str = "impala"):
    """The built-in `agent` whose update `at_update` also runs a few seconds of matrix
    products inside the compiled update (so XLA runs it asynchronously while the runtime waits
    for its outputs), or, `stuck`, a long LAPACK call in a host callback, which XLA on CPU runs
    inline in the calling (main) thread: the main thread is inside C code, where Python cannot
    run signal handlers, as during a long compilation or a blocking device wait."""
    def block_in_c():
        a = np.random.default_rng(0).random((3000, 3000), dtype=np.float32)
        return np.float32(np.linalg.eigvals(a).real.mean())  # one call, no Python inside

    def heavy(x):
        if stuck:
            return jax.pure_callback(block_in_c, jax.ShapeDtypeStruct((), jnp.float32))
        # ~160 GFLOP: about 2 s on 2 quiet cores, longer under load (25 products took ~1 s:
        # too close to the signals' timing on a fast machine).
        return jax.lax.fori_loop(0, 60, lambda i, y: jnp.tanh(y @ y / 1500.0), x).mean()

    def transform(built):
        def learn_step(state, rollout, axis_name):
            new_state, metrics = built.learn_step(state, rollout, axis_name)
            x = jnp.ones((1500, 1500), jnp.float32)
            busy = jax.lax.cond(state.update + 1 == at_update, heavy, lambda x: x[0, 0], x)
            return new_state, {**metrics, "test/busy": busy}  # used, so never pruned
        return dataclasses.replace(built, learn_step=learn_step)
    return agent_with(transform, agent)


def signal_after(update: int, count: int, sig: signal.Signals):
    """on_update hook: after `update`, sends `count` signals 0.5 s, 0.8 s ... later (the next
    update is dispatched within milliseconds of the hook; a host callback could mark its start
    exactly, but a callback makes XLA:CPU run the whole step inline in the main thread)."""
    def send():
        for i in range(count):
            time.sleep(0.5 if i == 0 else 0.3)
            os.kill(os.getpid(), sig)

    sent = []

    def on_update(done, env_steps, state):
        # `>=`: with fused calls the hook sees only each call's last update.
        if done >= update and not sent:
            sent.append(done)
            threading.Thread(target=send, daemon=True).start()
    return on_update
