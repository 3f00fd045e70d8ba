"""One process of the 2-process CartPole test (started via scripts/launch/local.py).

Takes the same flags as experiments/impala_atari.py (pass --config=...impala_classic.py).

Writes, per update, the global env-step counter and a hash of this process's copy of the
parameters to <run_dir>/checksums-p<rank>.txt (tests/multihost.param_checksums), so the test
can compare processes bit for bit.

With MULTIHOST_FIRST_ROLLOUT_STEPS=N in the environment it also wraps every actor env pool in
`FirstSteps` and writes one hash per pool (its reset observations and the actions and
observations of its first N steps: the first rollout) to <run_dir>/first-rollouts-p<rank>.txt,
so tests/slow/sebulba/test_multihost_seeds.py can check that the processes act on distinct envs.

With SEBULBA_TEST_LAG_S=S, process 1 sleeps a pseudo-random 0..S seconds after every update
(seeded: the same lags on every try), so the processes reach each update's collectives and
exchanges at different times.
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from experiments import impala_atari, wiring  # noqa: E402
from tests.multihost import config_path, param_checksums  # noqa: E402
from tests.fakes.first_steps import FirstSteps  # noqa: E402


def main(config):
    first_steps = int(os.environ.get("MULTIHOST_FIRST_ROLLOUT_STEPS", "0"))
    pools: list = []
    wrap = (lambda env: FirstSteps(env, first_steps, pools)) if first_steps else None
    lag = float(os.environ.get("SEBULBA_TEST_LAG_S", "0")) if config.distributed.process_id else 0
    draws = random.Random(0)
    with param_checksums(config) as checksum:
        def on_update(update, env_steps, state):
            checksum(update, env_steps, state)
            if lag:
                time.sleep(draws.uniform(0, lag))
        impala_atari.run(config, name="multihost", on_update=on_update, wrap_env=wrap)
    if first_steps:
        rank = config.distributed.process_id
        with open(os.path.join(config.run_dir, f"first-rollouts-p{rank}.txt"), "w") as f:
            f.write("".join(f"{h}\n" for h in sorted(p.hexdigest() for p in pools
                                                       if p.stepped)))


if __name__ == "__main__":
    wiring.cli(main, config_path("impala_classic.py"))
