"""Multi-host: the processes act on different environments, not copies of one another.

Two real processes (scripts/launch/local.py, gloo collectives on CPU) train CartPole for two
updates. Their parameters must agree bit for bit (tests/slow/sebulba/test_multihost.py checks that
at length), but data parallelism only helps if each process brings new data: a process's env seeds
and action-sampling key must differ from the other's (sebulba/runner.actor_seed spaces them by
process index). Each process fingerprints every actor env pool's first rollout (its reset
observations, and the actions and observations of its first unroll_length steps;
tests/fakes/first_steps.py) and the test asserts that no pool of one process matches a pool of the
other.
"""
import os


from tests.helpers import ROOT
from tests.multihost import launch_local, read_lines


DRIVER = os.path.join(ROOT, "tests", "programs", "sebulba_multihost.py")
UNROLL = 16


def test_processes_start_from_different_first_rollouts(tmp_path):
    run_dir = tmp_path / "run"
    env = dict(os.environ, MULTIHOST_FIRST_ROLLOUT_STEPS=str(UNROLL))
    proc = launch_local(DRIVER, [
        "--config=experiments/configs/impala_classic.py",
        "--config.actor_device_ids=(0,)", "--config.learner_device_ids=(1,)",
        f"--config.unroll_length={UNROLL}", "--config.num_envs=16",
        "--config.total_env_steps=1024", "--config.checkpoint_keep=0",
        f"--config.run_dir={run_dir}"], env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    pools = [read_lines(run_dir, f"first-rollouts-p{rank}.txt") for rank in (0, 1)]
    assert all(len(p) >= 1 for p in pools), pools
    # Same layout on both processes: the same number of actor env pools.
    assert len(pools[0]) == len(pools[1])
    # No pool of process 0 replays a pool of process 1 (distinct env seeds / sampling keys),
    # and within a process the pools (actor threads, half-pools) differ too.
    assert not set(pools[0]) & set(pools[1]), pools
    assert len(set(pools[0] + pools[1])) == 2 * len(pools[0])
    # ... while the learners stayed in lockstep (two updates, identical parameters).
    sums = [read_lines(run_dir, f"checksums-p{rank}.txt") for rank in (0, 1)]
    assert len(sums[0]) == 2 and sums[0] == sums[1]
