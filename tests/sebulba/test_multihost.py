"""Multi-host with real processes: 2 local processes, gloo collectives on CPU.

Each process has 2 fake CPU devices: device 0 acts, device 1 learns; the learner mesh spans
both processes' device 1, so every update is one data-parallel step across the two "hosts".
"""
import json
import os
import signal
import subprocess
import sys
import time
import pytest  # noqa: E402

pytestmark = pytest.mark.slow  # learning runs / several processes: `-m "not slow"` skips

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "sebulba", "multihost_run.py")
LAYOUT = ["--config=experiments/configs/impala_classic.py",
          "--config.actor_device_ids=(0,)", "--config.learner_device_ids=(1,)"]


def test_two_processes_train_in_lockstep(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "scripts/launch_local.py", "--num_processes", "2",
         "--devices_per_process", "2", "--", DRIVER, *LAYOUT,
         "--config.total_env_steps=30720", f"--config.run_dir={run_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    p0 = (run_dir / "checksums-p0.txt").read_text().splitlines()
    p1 = (run_dir / "checksums-p1.txt").read_text().splitlines()
    # Bit-identical parameters on both processes after every update.
    assert len(p0) == 60 and p0 == p1
    # Global step counter: 2 processes x 16 envs x 16 steps per update, counted once.
    steps = [int(line.split()[1]) for line in p0]
    assert steps == [512 * (i + 1) for i in range(60)]
    # Only process 0 writes logs; they hold global counts and the return improves.
    lines = [json.loads(l) for l in open(run_dir / "metrics.jsonl")]
    assert lines[-1]["step"] == 60 * 512
    assert lines[-1]["episode/return_mean"] > lines[0]["episode/return_mean"] + 10


def test_dead_peer_ends_the_other_process(tmp_path):
    """Kill process 1 mid-run: process 0 exits promptly with one message naming the lost
    process, saves no checkpoint of the update whose collective failed, and ends with a plain
    non-zero status: no traceback, no SIGABRT from jax.distributed's shutdown at exit."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    port = 29000 + os.getpid() % 1000
    run_dir = tmp_path / "run"
    procs = [subprocess.Popen(
        [sys.executable, DRIVER, *LAYOUT, "--config.total_env_steps=100000000",
         f"--config.run_dir={run_dir}", "--config.console_every_s=0",
         "--config.checkpoint_every_updates=3",
         f"--config.distributed.coordinator_address=127.0.0.1:{port}",
         "--config.distributed.num_processes=2", f"--config.distributed.process_id={i}",
         "--config.distributed.heartbeat_timeout_s=10"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)]
    try:
        updates = 0
        for line in procs[0].stdout:  # wait until a few updates (and a checkpoint) are done
            if "steps " in line and "sps" in line and " 0/" not in line:
                updates += 1
                if updates == 4:
                    break
        procs[1].send_signal(signal.SIGKILL)
        killed = time.time()
        out, _ = procs[0].communicate(timeout=90)
        assert time.time() - killed < 90
        assert procs[0].returncode == 1, out  # not -6 (SIGABRT)
        assert "Traceback" not in out and "Check failure" not in out, out
        errors = [line for line in out.splitlines() if line.startswith("ERROR: lost ")]
        assert len(errors) == 1 and errors[0].startswith("ERROR: lost process 1 of 2"), out
        assert "learner state is incomplete and is not saved" in errors[0]
        # No final save of the failed update's state (Checkpointer.close prints this line).
        assert not any(line.startswith("checkpoint: ") for line in out.splitlines()), out
        from sebulba import checkpoint
        steps = checkpoint.list_steps(str(run_dir / "checkpoints"))
        assert steps and f"Newest checkpoint: {run_dir}/checkpoints/{steps[-1]}." in errors[0]
        for step in steps:  # the periodic ones hold the update they are named after
            state, meta = checkpoint.load_raw(str(run_dir / "checkpoints" / str(step)))
            assert int(meta["updates"]) == int(state["update"]) == step
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
