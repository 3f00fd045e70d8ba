"""One process of the 2-process Anakin test (started via scripts/launch_local.py).

Takes experiments/ppo_gymnax.py's flags. Writes, per update, the global env-step counter and
a hash of this process's copy of the parameters to <run_dir>/checksums-p<rank>.txt, and the
hash of this process's first env observations (its own env streams) to first-obs-p<rank>.txt.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from anakin import runtime  # noqa: E402
from experiments import train  # noqa: E402
from sebulba import experiment  # noqa: E402
from sebulba.topology import local_replica  # noqa: E402


def main(config):
    rank = config.distributed.process_id
    os.makedirs(config.run_dir, exist_ok=True)
    out = open(os.path.join(config.run_dir, f"checksums-p{rank}.txt"), "w", buffering=1)

    def on_update(update, env_steps, state):
        h = hashlib.sha256()
        for leaf in jax.tree.leaves(local_replica(state.params)):
            h.update(np.asarray(leaf).tobytes())
        out.write(f"{update} {env_steps} {h.hexdigest()}\n")

    train.run(config, on_update=on_update)
    out.close()
    # This process's env streams (after joining, process_index is this rank's).
    key = runtime.runner_key(config.seed)
    with open(os.path.join(config.run_dir, f"first-obs-p{rank}.txt"), "w") as f:
        f.write(hashlib.sha256(np.asarray(jax.random.key_data(key)).tobytes()).hexdigest())


if __name__ == "__main__":
    experiment.cli(main, os.path.join(os.path.dirname(__file__), "..", "..", "experiments",
                                      "configs", "ppo_gymnax.py"))
