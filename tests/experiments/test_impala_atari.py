"""Config system and an Atari smoke run of experiments/impala_atari.py."""
import os
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from experiments.configs import impala_atari as atari_cfg
from tests.helpers import ROOT

SCRIPT = os.path.join(ROOT, "experiments", "impala_atari.py")


def _run(*args, timeout=300):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_default_config_fields():
    config = atari_cfg.get_config()
    assert config.env.name == "Breakout-v5" and config.agent.discount == 0.99
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        atari_cfg.get_config("nope")


def test_misspelt_override_fails_clearly(tmp_path):
    proc = _run("--config=experiments/configs/impala_atari.py:debug", "--config.num_env=8")
    assert proc.returncode != 0
    assert "num_env" in proc.stderr and "num_envs" in proc.stderr  # names a close match


def test_unknown_env_fails_before_training(tmp_path):
    proc = _run("--config=experiments/configs/impala_atari.py:debug",
                "--config.env.name=Pongg-v5", f"--config.run_dir={tmp_path}/r")
    assert proc.returncode != 0 and "Close matches: Pong-v5" in proc.stderr


def test_atari_smoke_run_writes_tensorboard(tmp_path):
    run_dir = tmp_path / "atari"
    proc = _run("--config=experiments/configs/impala_atari.py:debug",
                "--config.env.name=Breakout-v5", "--config.num_envs=4",
                f"--config.run_dir={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    for tag in ("loss/total", "sps", "policy_lag/mean", "optim/grad_norm"):
        assert tag in tags, tags
    events = acc.Scalars("loss/total")
    assert len(events) >= 2 and events[-1].step >= 256
    assert (run_dir / "metrics.jsonl").exists() and (run_dir / "config.json").exists()
