"""A stalled env under a real run (a process of its own, tests/programs/sebulba_faults.py): the
learner warns naming the actor, the env step and the queue depths, and Ctrl-C still stops the
run with a checkpoint."""
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT


def test_stalled_env_warns_with_queue_state_and_ctrl_c_still_stops(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "tests.programs.sebulba_faults", "stall",
                             str(tmp_path / "run")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines, deadline = [], time.time() + 120
    try:
        for line in proc.stdout:  # a loaded machine may warn during start-up (compiles) too
            lines.append(line)
            if "WARNING: learner has waited" in line and "(pool step 40)" in line:
                break
            assert time.time() < deadline, "".join(lines)
    except BaseException:
        proc.kill()  # never leave the stalled run behind
        raise
    warning = lines[-1]
    assert "stall_warning_s=3; queue depths per actor: [" in warning, warning
    assert re.search(r"actor-\d in env\.step \(pool step 40\) for \d+s", warning), warning
    sent = time.time()
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("stalled run did not stop within 30 s of SIGINT:\n" + "".join(lines))
    assert time.time() - sent < 30
    assert proc.returncode == 130 and "stopped by SIGINT" in out, out
    assert "checkpoint: " in out, out
