"""Anakin multi-host with real processes: 2 local processes x 2 fake CPU devices, one update
spanning all 4 devices over gloo (as tests/sebulba/test_multihost.py does for Sebulba)."""
import json
import os
import signal
import subprocess
import sys
import time
import pytest  # noqa: E402

pytestmark = pytest.mark.slow  # learning runs / several processes: `-m "not slow"` skips

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "anakin", "multihost_run.py")


def test_two_processes_train_in_lockstep(tmp_path):
    run_dir = tmp_path / "run"
    updates = 20
    proc = subprocess.run(
        [sys.executable, "scripts/launch_local.py", "--num_processes", "2",
         "--devices_per_process", "2", "--", DRIVER,
         "--config=experiments/configs/ppo_gymnax.py", "--config.learner_device_ids=(0,1)",
         "--config.num_envs=16", "--config.unroll_length=16", "--config.agent.num_minibatches=2",
         f"--config.total_env_steps={updates * 512}", f"--config.run_dir={run_dir}",
         "--config.checkpoint_keep=1"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    p0 = (run_dir / "checksums-p0.txt").read_text().splitlines()
    p1 = (run_dir / "checksums-p1.txt").read_text().splitlines()
    assert len(p0) == updates and p0 == p1  # bit-identical parameters after every update
    # Global counter: 2 processes x 16 envs x 16 steps per update, counted once.
    assert [int(line.split()[1]) for line in p0] == [512 * (i + 1) for i in range(updates)]
    # Each process steps its own env streams.
    assert (run_dir / "first-obs-p0.txt").read_text() != (run_dir / "first-obs-p1.txt").read_text()
    lines = [json.loads(l) for l in open(run_dir / "metrics.jsonl")]  # process 0 only
    assert lines[-1]["step"] == updates * 512
    assert lines[-1]["episode/return_mean"] > lines[0]["episode/return_mean"]
    assert (run_dir / "checkpoints" / str(updates)).is_dir()


def test_dead_peer_ends_the_other_process(tmp_path):
    """Kill process 1 mid-run: process 0 exits promptly with one message naming the lost
    process and a plain non-zero status (no traceback, no abort at exit), as Sebulba does.

    One device per process, as tests/sebulba/test_multihost.py: with two local devices per
    process in the mesh the failed gloo collective was not reported before the heartbeat
    timeout, and the coordination service aborted the survivor (SIGABRT) instead."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    port = 30000 + os.getpid() % 1000
    run_dir = tmp_path / "run"
    procs = [subprocess.Popen(
        [sys.executable, DRIVER, "--config=experiments/configs/ppo_gymnax.py",
         "--config.learner_device_ids=(0,)", "--config.num_envs=16",
         "--config.unroll_length=16", "--config.agent.num_minibatches=2",
         "--config.total_env_steps=100000000", f"--config.run_dir={run_dir}",
         "--config.console_every_s=0", "--config.checkpoint_every_updates=3",
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
        assert procs[0].returncode == 1, out
        assert "Traceback" not in out and "Check failure" not in out, out
        errors = [line for line in out.splitlines() if line.startswith("ERROR: lost ")]
        assert len(errors) == 1 and errors[0].startswith("ERROR: lost process 1 of 2"), out
        assert "Newest checkpoint: " in errors[0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
