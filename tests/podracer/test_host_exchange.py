"""podracer.distributed's host exchange: what varies between processes by timing (finished
games, the length of Anakin's next call) crosses processes as fixed-size host data, in a
program that has finished on every local device before the loop sends its next update."""
import os

import numpy as np
import pytest

from podracer import distributed
from tests.helpers import ROOT
from tests.multihost import launch_local

STRESS = os.path.join(ROOT, "tests", "podracer", "exchange_stress.py")


def test_one_process_exchange_is_its_own_data():
    local = np.arange(6, dtype=np.float32).reshape(2, 3)
    every = distributed.allgather_host(local)
    assert every.shape == (1, 2, 3) and np.array_equal(every[0], local)
    assert int(distributed.broadcast_host(np.int32(7))) == 7


@pytest.mark.slow
def test_exchange_after_every_update_never_meets_the_next_update():
    """300 rounds of update (collectives on device 1) -> host exchange -> next update at once,
    with device 0 kept busy: every exchange holds every process's data, and the job never
    aborts. jax's own process_allgather in the same driver (--exchange=jax) aborts this job
    within a few rounds on a 2-core machine ("1536 vs 32 ... collective mismatch")."""
    proc = launch_local(STRESS, ["--exchange=host", "--rounds=300"], timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "[p0] ok 300" in out and "[p1] ok 300" in out
