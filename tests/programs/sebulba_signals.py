"""A CartPole run that gets signals while an update is in flight (for test_shutdown.py).

Usage: python -m tests.programs.sebulba_signals RUN_DIR NUM_SIGNALS AT_UPDATE [SIGNAL] [stuck]

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

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from experiments import wiring  # noqa: E402
from experiments.configs import impala_classic  # noqa: E402
from tests.helpers import quiet_config  # noqa: E402
from tests.signal_hooks import signal_after, slow_update  # noqa: E402


def main(run_dir: str, count: int, at_update: int, sig: str = "SIGINT",
         mode: str = "") -> None:
    config = quiet_config(impala_classic.get_config(), run_dir, console_every_s=0.0,
                          actor_device_ids=(0,),
                          learner_device_ids=(1,),  # one device: the callback runs once per update
                          checkpoint_every_updates=0, checkpoint_every_minutes=0.0,
                          total_env_steps=10_000_000)
    wiring.run(config, agent=slow_update(at_update, mode == "stuck"), name="signal",
               on_update=signal_after(at_update - 1, count, signal.Signals[sig]))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:])
