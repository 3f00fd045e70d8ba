"""The masked-CartPole example's documented command, run."""
import subprocess
import sys

import examples.masked_cartpole  # noqa: F401  registers MaskedCartPole-v1
from tests.helpers import ROOT


def test_documented_command_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "examples.masked_cartpole.train",
         "--config=examples/masked_cartpole/config.py:debug", f"--config.run_dir={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "summary.json").exists()
