"""scripts/evaluate.py on a trained CartPole agent; scripts/render.py on a Breakout checkpoint."""
import json

import imageio.v3 as iio
import jax
import pytest

from experiments import impala_atari
from experiments.configs import impala_atari as atari_cfg
from scripts import evaluate, render
from sebulba import checkpoint, envs, experiment
from tests.helpers import classic_config


def _save_untrained(config, directory: str) -> None:
    """The freshly initialised agent of `config`, saved as a checkpoint (the baseline)."""
    probe = envs.make_env(experiment.env_config(config), 1, 0)
    obs = probe.reset()
    network = experiment.make_network(config, probe.action_space)
    probe.close()
    state = impala_atari.make_agent(network, config.agent, 1).init(jax.random.key(0), obs)
    ckpt = checkpoint.Checkpointer(directory, metadata={
        "experiment": "impala", "config": json.loads(config.to_json())})
    ckpt.close(checkpoint.Progress(state, 0, 0))


def test_evaluate_trained_cartpole_beats_untrained(tmp_path):
    # ~150k steps: the 100-game training mean (sampled actions) passes ~150 by then.
    config = classic_config(tmp_path, total_env_steps=150_000)
    impala_atari.run(config)
    out = tmp_path / "eval.json"
    report = evaluate.main([config.run_dir, "--episodes", "10", "--output", str(out)])
    assert report == json.loads(out.read_text())
    assert report["episodes"] == len(report["returns"]) == 10
    assert report["policy"] == "greedy" and report["seed"] == evaluate.EVAL_SEED
    assert report["min"] <= report["median"] <= report["max"]
    assert report["mean"] > 100, report  # untrained: ~10-30

    _save_untrained(config, str(tmp_path / "untrained" / "checkpoints"))
    baseline = evaluate.main([str(tmp_path / "untrained"), "--episodes", "10"])
    assert baseline["mean"] < 100, baseline
    assert (tmp_path / "untrained" / "eval" / "update0-greedy.json").exists()


@pytest.fixture(scope="module")
def breakout_run(tmp_path_factory):
    config = atari_cfg.get_config("debug")  # 4 updates of 64 steps
    config.env.name = "Breakout-v5"
    config.run_dir = str(tmp_path_factory.mktemp("breakout") / "run")
    config.console_every_s = 1e9
    impala_atari.run(config)
    return config.run_dir


def test_render_breakout_writes_decodable_frames(breakout_run, tmp_path):
    path = render.main([breakout_run, "--output", str(tmp_path / "b.mp4"), "--max_frames", "30",
                        "--policy", "sample"])
    assert path.endswith(".mp4" if render.can_write_mp4() else ".gif")
    frames = iio.imread(path, index=None)
    assert frames.ndim == 4 and frames.shape[0] >= 2, frames.shape
    assert frames.shape[1:] == (210, 160, 3)  # the full Atari screen, RGB
    assert frames.std() > 0


def test_render_observation_frames_fallback(breakout_run, tmp_path):
    path = render.main([breakout_run, "--output", str(tmp_path / "obs.gif"), "--frames", "obs",
                        "--max_frames", "5", "--scale", "2"])
    assert iio.imread(path, index=None).shape[1:] == (168, 168, 3)  # 84x84 grayscale, x2
