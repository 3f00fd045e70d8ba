"""One process of the 2-process CartPole test (started via scripts/launch_local.py).

Takes the same flags as experiments/impala_atari.py (pass --config=...impala_classic.py).

Writes, per update, the global env-step counter and a hash of this process's copy of the
parameters to <run_dir>/checksums-p<rank>.txt, so the test can compare processes bit for bit.

With MULTIHOST_FIRST_ROLLOUT_STEPS=N in the environment it also wraps every actor env pool in
`FirstSteps` and writes one hash per pool (its reset observations and the actions and
observations of its first N steps: the first rollout) to <run_dir>/first-rollouts-p<rank>.txt,
so tests/sebulba/test_multihost_seeds.py can check that the processes act on distinct envs.
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
from tests.sebulba.first_steps import FirstSteps  # noqa: E402


def main(config):
    rank = config.distributed.process_id
    os.makedirs(config.run_dir, exist_ok=True)
    out = open(os.path.join(config.run_dir, f"checksums-p{rank}.txt"), "w", buffering=1)

    def on_update(update, env_steps, state):
        h = hashlib.sha256()
        for leaf in jax.tree.leaves(local_replica(state.params)):
            h.update(np.asarray(leaf).tobytes())
        out.write(f"{update} {env_steps} {h.hexdigest()}\n")

    first_steps = int(os.environ.get("MULTIHOST_FIRST_ROLLOUT_STEPS", "0"))
    pools: list = []
    wrap = (lambda env: FirstSteps(env, first_steps, pools)) if first_steps else None
    experiment.run(config, impala_atari.make_agent, name="multihost", on_update=on_update,
                   wrap_env=wrap)
    out.close()
    if first_steps:
        with open(os.path.join(config.run_dir, f"first-rollouts-p{rank}.txt"), "w") as f:
            f.write("".join(f"{h}\n" for h in sorted(p.hexdigest() for p in pools
                                                       if p.stepped)))


if __name__ == "__main__":
    experiment.cli(main, os.path.join(os.path.dirname(__file__), "..", "..", "experiments",
                                      "configs", "impala_classic.py"))
