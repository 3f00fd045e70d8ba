"""An Anakin PPO run on gymnax CartPole that gets signals while a call is in flight (for
test_signals.py), the counterpart of tests/programs/sebulba_signals.py.

Usage: python -m tests.programs.anakin_signals RUN_DIR NUM_SIGNALS AT_UPDATE [SIGNAL] [stuck|paced]

One update per call (`updates_per_call=1`), so the signals fall into the call of update
AT_UPDATE alone; `paced`: the default paced fused calls instead (up to 16 updates per call).
Update AT_UPDATE is made slow: a few seconds of matrix products inside the compiled update, so
XLA runs it asynchronously while the loop waits for its outputs. Right after update
AT_UPDATE - 1, a thread sends this process NUM_SIGNALS signals (SIGINT by default) 0.5 s and
0.8 s later, so they arrive while that call runs. Only the final checkpoint is written (no
periodic ones): it is the one the test reads.

`stuck`: update AT_UPDATE instead runs a long LAPACK call (~30 s) in a host callback, which
XLA on CPU runs inline in the calling (main) thread: the main thread is inside C code, where
Python cannot run signal handlers, as during a long compilation.
"""
import os
import signal
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from experiments import wiring  # noqa: E402
from experiments.configs import ppo_gymnax  # noqa: E402
from tests.helpers import quiet_config  # noqa: E402
from tests.signal_hooks import signal_after, slow_update  # noqa: E402


def main(run_dir: str, count: int, at_update: int, sig: str = "SIGINT",
         mode: str = "") -> None:
    config = quiet_config(ppo_gymnax.get_config(), run_dir, console_every_s=0.0,
                          num_envs=8, unroll_length=16, learner_device_ids=(0,),
                          checkpoint_every_updates=0, checkpoint_every_minutes=0.0,
                          total_env_steps=10_000_000, **{"agent.num_minibatches": 2})
    if mode != "paced":
        config.updates_per_call = 1
    wiring.run(config, agent=slow_update(at_update, mode == "stuck", agent="ppo"),
               name="signal", on_update=signal_after(at_update - 1, count, signal.Signals[sig]))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:])
