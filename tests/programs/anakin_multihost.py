"""One process of the 2-process Anakin test (started via scripts/launch/local.py).

Takes experiments/ppo_gymnax.py's flags. Writes, per update, the global env-step counter and
a hash of this process's copy of the parameters to <run_dir>/checksums-p<rank>.txt
(tests/multihost.param_checksums; process 1 sleeps ANAKIN_TEST_LAG_S seconds after update 1),
and the hash of this process's first env observations (its own env streams) to
first-obs-p<rank>.txt.
"""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from anakin import key_streams  # noqa: E402
from experiments import train, wiring  # noqa: E402
from tests.multihost import config_path, param_checksums  # noqa: E402


def main(config):
    # ANAKIN_TEST_LAG_S: process 1 waits this long after the first update, so the processes
    # time the second call differently (process 0 waits for process 1 inside it).
    lag = float(os.environ.get("ANAKIN_TEST_LAG_S", "0")) if config.distributed.process_id else 0
    with param_checksums(config) as checksum:
        def on_update(update, env_steps, state):
            checksum(update, env_steps, state)
            if update == 1:
                time.sleep(lag)
        train.run(config, on_update=on_update)
    # This process's env streams (after joining, process_index is this rank's).
    key = key_streams.runner_key(config.seed)
    rank = config.distributed.process_id
    with open(os.path.join(config.run_dir, f"first-obs-p{rank}.txt"), "w") as f:
        f.write(hashlib.sha256(np.asarray(jax.random.key_data(key)).tobytes()).hexdigest())


if __name__ == "__main__":
    wiring.cli(main, config_path("ppo_gymnax.py"))
