"""The driving example's two documented commands, run (a training run each)."""
import os
import subprocess
import sys

import numpy as np

import examples.driving  # noqa: F401  registers Driving-v0 and driving_net
from examples.driving import config as driving_config
from experiments import train
from tests.helpers import ROOT, quiet_config


def _smoke(config, tmp_path):
    return quiet_config(config, tmp_path / "run", num_envs=8, unroll_length=8,
                        total_env_steps=128, checkpoint_keep=0,
                        **{"network.torso_kwargs.conv_channels": (4,),
                           "network.torso_kwargs.hidden": 16})


def test_ppo_command_smoke(tmp_path):
    config = _smoke(driving_config.get_config("ppo"), tmp_path)
    config.agent.num_epochs = 1
    config.agent.num_minibatches = 1  # one unrolled SGD step: a short compile
    result = train.run(config)
    assert result.updates == 2 and np.isfinite(result.last_metrics["loss/total"])


def test_impala_command_line_smoke(tmp_path):
    """The documented command, as a subprocess (argument parsing, registration by import)."""
    cmd = [sys.executable, "-m", "examples.driving.train",
           "--config=examples/driving/config.py:impala", f"--config.run_dir={tmp_path}/run",
           "--config.num_envs=8", "--config.unroll_length=8", "--config.total_env_steps=128",
           "--config.checkpoint_keep=0", "--config.network.torso_kwargs.conv_channels=(4,)",
           "--config.network.torso_kwargs.hidden=16", "--config.env.options.max_steps=20"]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert os.path.exists(tmp_path / "run" / "summary.json")
