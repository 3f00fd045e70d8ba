"""scripts/evaluate.py on CartPole checkpoints; scripts/render.py on a Breakout checkpoint (a
trained agent against an untrained one: tests/slow/scripts/test_evaluate_learned.py)."""
import json

import imageio.v3 as iio
import pytest

from experiments import impala_atari
from experiments.configs import impala_atari as atari_cfg
from scripts import evaluate, render
from tests.helpers import quiet_config, save_untrained


def test_evaluate_rebuilds_a_checkpoint_of_an_older_or_resumed_run(impala_classic_config, tmp_path):
    """A config saved before `agent_name` existed names its agent by the checkpoint's
    experiment; the training run's resume source (rotated away since) is not needed."""
    config = impala_classic_config()
    saved = json.loads(config.to_json())
    del saved["agent_name"]
    saved["resume"] = str(tmp_path / "gone" / "checkpoints" / "7")
    save_untrained(config, str(tmp_path / "old" / "checkpoints"), saved=saved)
    policy = evaluate.load_policy(str(tmp_path / "old"))
    assert policy.sections.spec.name == "impala" and "agent_name" not in policy.config
    report = evaluate.main([str(tmp_path / "old"), "--episodes", "2", "--num_envs", "2"])
    assert report["experiment"] == "impala" and report["episodes"] == 2

    # Neither an agent_name nor an experiment that is an agent: one error saying what to do.
    save_untrained(config, str(tmp_path / "mine" / "checkpoints"), experiment="my_run",
                   saved=saved)
    with pytest.raises(ValueError, match="experiment 'my_run' is not a registered agent"):
        evaluate.load_policy(str(tmp_path / "mine"))


@pytest.fixture(scope="module")
def breakout_run(tmp_path_factory):
    config = quiet_config(atari_cfg.get_config("debug"),  # 4 updates of 64 steps
                          tmp_path_factory.mktemp("breakout") / "run",
                          **{"env.name": "Breakout-v5"})
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
