"""The scripts run as files (`python scripts/x.py`) from any directory, with no sys.path edits:
their shared modules (_bench, _runs, _actor_before, evaluate) import as siblings there and as
`scripts.*` when the tests import them."""
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _run(tmp_path, script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / script), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("script", ["benchmark.py", "evaluate.py", "render.py", "sweep.py",
                                    "plot.py", "anakin_benchmark.py"])
def test_help_from_another_directory(tmp_path, script):
    proc = _run(tmp_path, script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:"), proc.stdout


def test_benchmark_loads_the_frozen_actor_as_a_sibling(tmp_path):
    # --actor_impls before imports scripts/_actor_before.py only when measuring.
    proc = _run(tmp_path, "benchmark.py", "--env", "CartPole-v1", "--num_envs", "2",
                "--actor_threads", "1", "--seconds", "0.3", "--warmup_steps", "2",
                "--unroll_length", "4", "--measures", "env_infer", "--actor_impls", "before")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "before actor, one pool" in proc.stdout, proc.stdout


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_shell_scripts_parse(script):
    # The GPU scripts run where a syntax error costs borrowed device minutes; their plumbing is
    # rehearsed on CPU by hand (each script's header), their syntax here.
    proc = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
