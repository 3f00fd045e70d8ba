"""podracer.distributed's host exchange under load: two processes, 300 rounds."""
import os

from tests.helpers import ROOT
from tests.multihost import launch_local


STRESS = os.path.join(ROOT, "tests", "programs", "exchange_stress.py")


def test_exchange_after_every_update_never_meets_the_next_update():
    """300 rounds of update (collectives on device 1) -> host exchange -> next update at once,
    with device 0 kept busy: every exchange holds every process's data, and the job never
    aborts. jax's own process_allgather in the same driver (--exchange=jax) aborts this job
    within a few rounds on a 2-core machine ("1536 vs 32 ... collective mismatch")."""
    proc = launch_local(STRESS, ["--exchange=host", "--rounds=300"], timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "[p0] ok 300" in out and "[p1] ok 300" in out
