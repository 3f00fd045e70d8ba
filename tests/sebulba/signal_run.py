"""A CartPole run that gets signals while an update is in flight (for test_shutdown.py).

Usage: python -m tests.sebulba.signal_run RUN_DIR NUM_SIGNALS AT_UPDATE [SIGNAL] [stuck]

Update AT_UPDATE is made slow (a few seconds of matrix products inside the compiled step, so
XLA runs it asynchronously while the learner waits for it). Right after update AT_UPDATE - 1,
a thread sends this process NUM_SIGNALS signals (SIGINT by default) 0.5 s and 0.8 s later:
they arrive while the learner waits for the slow update, the moment when a signal handler
that raised once made the final checkpoint save one update's state under the previous update's
label. Only the final checkpoint is written (no periodic ones): it is the one the test reads.

`stuck`: update AT_UPDATE instead runs a long LAPACK call (~30 s) in a host callback, which
XLA on CPU runs inline in the calling (main) thread: the main thread is inside C code, where
Python cannot run signal handlers, as during a long compilation or a blocking device wait.
"""
import os
import signal
import sys
import threading
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import dataclasses  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from experiments import wiring  # noqa: E402
from experiments.configs import impala_classic  # noqa: E402
from tests.helpers import agent_with, quiet_config  # noqa: E402


def _slow_update(at_update: int, stuck: bool = False):
    """IMPALA whose update `at_update` also runs a few seconds of matrix products (or,
    `stuck`, a long C call in a host callback)."""
    def block_in_c():
        a = np.random.default_rng(0).random((3000, 3000), dtype=np.float32)
        return np.float32(np.linalg.eigvals(a).real.mean())  # one call, no Python inside

    def heavy(x):
        if stuck:
            return jax.pure_callback(block_in_c, jax.ShapeDtypeStruct((), jnp.float32))
        # ~160 GFLOP: about 2 s on 2 quiet cores, longer under load (25 products took ~1 s:
        # too close to the signals' timing on a fast machine).
        return jax.lax.fori_loop(0, 60, lambda i, y: jnp.tanh(y @ y / 1500.0), x).mean()

    def transform(agent):
        def learn_step(state, rollout, axis_name):
            new_state, metrics = agent.learn_step(state, rollout, axis_name)
            x = jnp.ones((1500, 1500), jnp.float32)
            busy = jax.lax.cond(state.update + 1 == at_update, heavy, lambda x: x[0, 0], x)
            return new_state, {**metrics, "test/busy": busy}  # used, so never pruned
        return dataclasses.replace(agent, learn_step=learn_step)
    return agent_with(transform)


def _signal_after(update: int, count: int, sig: signal.Signals):
    """on_update hook: after `update`, sends `count` signals 0.5 s, 0.8 s ... later (the next
    update is dispatched within milliseconds of the hook; a host callback could mark its start
    exactly, but a callback makes XLA:CPU run the whole step inline in the main thread)."""
    def send():
        for i in range(count):
            time.sleep(0.5 if i == 0 else 0.3)
            os.kill(os.getpid(), sig)

    def on_update(done, env_steps, state):
        if done == update:
            threading.Thread(target=send, daemon=True).start()
    return on_update


def main(run_dir: str, count: int, at_update: int, sig: str = "SIGINT",
         mode: str = "") -> None:
    config = quiet_config(impala_classic.get_config(), run_dir, console_every_s=0.0,
                          actor_device_ids=(0,),
                          learner_device_ids=(1,),  # one device: the callback runs once per update
                          checkpoint_every_updates=0, checkpoint_every_minutes=0.0,
                          total_env_steps=10_000_000)
    wiring.run(config, agent=_slow_update(at_update, mode == "stuck"), name="signal",
               on_update=_signal_after(at_update - 1, count, signal.Signals[sig]))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:])
