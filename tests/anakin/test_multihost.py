"""Anakin multi-host with real processes: 2 local processes x 2 fake CPU devices, one update
spanning all 4 devices over gloo (as tests/sebulba/test_multihost.py does for Sebulba)."""
import json
import os
import subprocess
import sys

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
