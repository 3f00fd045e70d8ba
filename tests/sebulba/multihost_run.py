"""One process of the 2-process CartPole test (started via scripts/launch_local.py).

Takes the same flags as experiments/impala_atari.py (pass --config=...impala_classic.py).

Writes, per update, the global env-step counter and a hash of this process's copy of the
parameters to <run_dir>/checksums-p<rank>.txt, so the test can compare processes bit for bit.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from experiments import impala_atari  # noqa: E402
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

    experiment.run(config, impala_atari.make_agent, name="multihost", on_update=on_update)
    out.close()


if __name__ == "__main__":
    experiment.cli(main, os.path.join(os.path.dirname(__file__), "..", "..", "experiments",
                                      "configs", "impala_classic.py"))
