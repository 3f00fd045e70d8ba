"""The tools run as modules from the checkout's root (`python -m scripts.evaluate ...`), the one
way the docs teach; the GPU study's shell scripts parse (their plumbing is rehearsed on CPU by
hand, see each script's header: a syntax error there costs borrowed device minutes)."""
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

TOOLS = ("scripts.evaluate", "scripts.render", "scripts.plot", "scripts.sweep",
         "scripts.random_scores", "scripts.launch.local", "benchmarks.throughput",
         "benchmarks.anakin_throughput", "benchmarks.startup_time", "benchmarks.memory_soak",
         "benchmarks.study_table", "benchmarks.peers.purejaxrl")


@pytest.mark.parametrize("module", TOOLS)
def test_help(module):
    proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("usage:"), proc.stdout


@pytest.mark.parametrize("script", ["benchmarks/gpu/session.sh", "benchmarks/gpu/study.sh",
                                    "benchmarks/gpu/pong.sh"])
def test_shell_scripts_parse(script):
    proc = subprocess.run(["bash", "-n", os.path.join(ROOT, script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
