"""One process of the 2-process Anakin test (started via scripts/launch_local.py).

Takes experiments/ppo_gymnax.py's flags. Writes, per update, the global env-step counter and
a hash of this process's copy of the parameters to <run_dir>/checksums-p<rank>.txt
(tests/multihost.param_checksums), and the hash of this process's first env observations (its
own env streams) to first-obs-p<rank>.txt.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from anakin import runtime  # noqa: E402
from experiments import train, wiring  # noqa: E402
from tests.multihost import config_path, param_checksums  # noqa: E402


def main(config):
    with param_checksums(config) as on_update:
        train.run(config, on_update=on_update)
    # This process's env streams (after joining, process_index is this rank's).
    key = runtime.runner_key(config.seed)
    rank = config.distributed.process_id
    with open(os.path.join(config.run_dir, f"first-obs-p{rank}.txt"), "w") as f:
        f.write(hashlib.sha256(np.asarray(jax.random.key_data(key)).tobytes()).hexdigest())


if __name__ == "__main__":
    wiring.cli(main, config_path("ppo_gymnax.py"))
