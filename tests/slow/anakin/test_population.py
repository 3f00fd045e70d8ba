"""Signals end an Anakin population (a run in a subprocess) as one run."""
import json
import signal
import subprocess
import sys
import time

import pytest

from podracer import checkpoint
from tests.helpers import ROOT

_CHILD = """
import sys
from experiments import train
from experiments.configs import ppo_gymnax
from tests.helpers import quiet_config
config = quiet_config(ppo_gymnax.get_config(), sys.argv[1], num_envs=8, unroll_length=16,
                      num_seeds=3, total_env_steps=10_000_000, checkpoint_every_minutes=0.0,
                      **{"agent.num_minibatches": 2})
train.run(config)
"""


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_signals_end_a_population_as_one_run(tmp_path, sig, status):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(run)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        jsonl = run / "members" / "00-s0" / "metrics.jsonl"
        deadline = time.time() + 240
        while time.time() < deadline and not (jsonl.exists() and len(jsonl.read_text()
                                                                      .splitlines()) >= 2):
            time.sleep(0.5)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == status, out
    assert "Traceback" not in out, out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stopped_by"] == sig.name and len(summary["members"]) == 3
    steps = checkpoint.list_steps(str(run / "checkpoints"))
    assert steps == [summary["updates"]], (steps, summary)
    for m in ("00-s0", "01-s1", "02-s2"):
        member = json.loads((run / "members" / m / "summary.json").read_text())
        assert member["updates"] == summary["updates"] and member["seed"] == int(m[-1])
