"""Multi-host with real processes: 2 local processes, gloo collectives on CPU.

Each process has 2 fake CPU devices: device 0 acts, device 1 learns; the learner mesh spans
both processes' device 1, so every update is one data-parallel step across the two "hosts".
"""
import os

import pytest

from podracer import checkpoint
from tests.helpers import ROOT, read_metrics
from tests.multihost import kill_peer_mid_run, launch_local, process_tails, read_lines


DRIVER = os.path.join(ROOT, "tests", "programs", "sebulba_multihost.py")
LAYOUT = ["--config=experiments/configs/impala_classic.py",
          "--config.actor_device_ids=(0,)", "--config.learner_device_ids=(1,)"]


@pytest.mark.parametrize("lag_s,cache", [(0.0, True), (0.1, False)],
                         ids=["even", "process-1-lags-no-cache"])
def test_two_processes_train_in_lockstep(tmp_path, lag_s, cache):
    """Also with process 1 sleeping 0..0.1 s after every update and every program compiled
    anew (no persistent cache): the processes then meet each update's collectives and its
    games' exchange at different times (docs/robustness.md)."""
    run_dir = tmp_path / "run"
    flags = [] if cache else ["--config.compilation_cache_dir="]
    proc = launch_local(DRIVER, [*LAYOUT, *flags, "--config.total_env_steps=30720",
                                 f"--config.run_dir={run_dir}"], timeout=300,
                        env=dict(os.environ, SEBULBA_TEST_LAG_S=str(lag_s)))
    assert proc.returncode == 0, process_tails(proc.stdout + proc.stderr)
    p0, p1 = (read_lines(run_dir, f"checksums-p{rank}.txt") for rank in (0, 1))
    # Bit-identical parameters on both processes after every update.
    assert len(p0) == 60 and p0 == p1
    # Global step counter: 2 processes x 16 envs x 16 steps per update, counted once.
    steps = [int(line.split()[1]) for line in p0]
    assert steps == [512 * (i + 1) for i in range(60)]
    # Only process 0 writes logs; they hold global counts and the return improves.
    lines = read_metrics(run_dir)
    assert lines[-1]["step"] == 60 * 512
    assert lines[-1]["episode/return_mean"] > lines[0]["episode/return_mean"] + 10


def test_dead_peer_ends_the_other_process(tmp_path):
    """Kill process 1 mid-run: process 0 exits promptly with one message naming the lost
    process, saves no checkpoint of the update whose collective failed, and ends with a plain
    non-zero status: no traceback, no SIGABRT from jax.distributed's shutdown at exit."""
    run_dir = tmp_path / "run"
    out, error = kill_peer_mid_run(DRIVER, LAYOUT, run_dir, port=29000 + os.getpid() % 1000)
    assert "learner state is incomplete and is not saved" in error
    # No final save of the failed update's state (Checkpointer.close prints this line).
    assert not any(line.startswith("checkpoint: ") for line in out.splitlines()), out
    steps = checkpoint.list_steps(str(run_dir / "checkpoints"))
    assert steps and f"Newest checkpoint: {run_dir}/checkpoints/{steps[-1]}." in error
    for step in steps:  # the periodic ones hold the update they are named after
        state, meta = checkpoint.load_raw(str(run_dir / "checkpoints" / str(step)))
        assert int(meta["updates"]) == int(state["update"]) == step
