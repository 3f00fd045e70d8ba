"""Faults end the run promptly: an actor error exits non-zero; Ctrl-C and SIGTERM stop it
after the current update and leave a checkpoint (SIGTERM, i.e. pre-emption, then exits 0)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.sebulba.test_checkpoint import restore_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _start(mode, tmp_path):
    return subprocess.Popen([sys.executable, "-m", "tests.sebulba.fault_run", mode,
                             str(tmp_path / "run")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_actor_error_stops_run_with_nonzero_exit(tmp_path):
    start = time.time()
    proc = _start("actor_error", tmp_path)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    assert "injected env failure" in out
    assert "actor-1" in out  # the failing thread is named
    assert time.time() - start < 120


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_run_and_leaves_a_loadable_checkpoint(tmp_path, sig):
    proc = _start("long", tmp_path)
    lines = []
    deadline = time.time() + 90
    for line in proc.stdout:  # wait until training is under way
        lines.append(line)
        if "steps " in line and "/10,000,000" in line and not line.strip().endswith("--"):
            break
        assert time.time() < deadline, "".join(lines)
    sent = time.time()
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=20)  # drains stdout, so printing never blocks it
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("run did not stop within 20 s of " + sig.name)
    assert time.time() - sent < 20
    if sig == signal.SIGTERM:
        assert proc.returncode == 0, out  # pre-emption: checkpoint written, clean exit
    else:
        assert proc.returncode != 0, out  # Ctrl-C: KeyboardInterrupt after the checkpoint
    assert "checkpoint: " in out, out
    run_dir = tmp_path / "run"
    saved = restore_run(str(run_dir))
    steps = [json.loads(line)["step"] for line in open(run_dir / "metrics.jsonl")]
    assert saved.updates == len(steps) > 0 and saved.env_steps == steps[-1]
