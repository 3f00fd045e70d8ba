"""scripts/sb3_highway.py's route for this library's policy: a HighwayFast-v0 run of
ppo_highway.py:debug, exported with --onnx, played by `_policy("ours", run_dir)` (the export's
ONNX model in onnxruntime) in the game loop on EnvPool gives the same games as the export's
StableHLO function in JAX. Slow: a training run and an ONNX conversion (~30 s)."""
import importlib.util
import sys

import numpy as np
import pytest

from experiments import train
from experiments.configs import ppo_highway
from scripts import export, sb3_highway

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax2onnx") is None or importlib.util.find_spec("onnxruntime")
    is None, reason="the ONNX extra (requirements-onnx.txt) is not installed")


def test_the_onnx_policy_plays_the_games_the_jax_one_does(tmp_path):
    config = ppo_highway.get_config("debug")
    config.run_dir = str(tmp_path / "run")
    train.run(config)
    with pytest.raises(FileNotFoundError, match="scripts.export"):
        sb3_highway._policy("ours", config.run_dir)
    folder = export.export(config.run_dir, str(tmp_path / "run" / "export" / "update3-greedy"),
                           onnx=True)
    n, seed = 20, 3
    onnx_games = sb3_highway.first_games(sb3_highway.make_envs("envpool", n, seed),
                                         sb3_highway._policy("ours", config.run_dir), n)
    sys.path.insert(0, folder)
    try:
        from load_policy import load
    finally:
        sys.path.pop(0)
    jax_policy = load(folder, runtime="jax")
    jax_games = sb3_highway.first_games(
        sb3_highway.make_envs("envpool", n, seed),
        lambda obs: np.asarray(jax_policy(obs)[0]), n)
    for key in ("return", "length", "crashed", "speed"):
        np.testing.assert_array_equal(onnx_games[key], jax_games[key], err_msg=key)
