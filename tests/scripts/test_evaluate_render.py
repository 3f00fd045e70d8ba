"""scripts/evaluate.py on a trained CartPole agent; scripts/render.py on a Breakout checkpoint."""
import json

import imageio.v3 as iio
import jax
import pytest

from experiments import impala_atari
from experiments.configs import impala_atari as atari_cfg
from scripts import evaluate, render
from tests.helpers import build_agent, quiet_config, save_state


def _save_untrained(config, directory: str, experiment: str = "impala",
                    saved: dict | None = None) -> None:
    """The freshly initialised agent of `config`, saved as a checkpoint (the baseline) whose
    metadata holds `saved` (default: `config`) as the run's config."""
    _, agent, obs = build_agent(config)
    save_state(directory, agent.init(jax.random.key(0), obs), experiment,
               saved or json.loads(config.to_json()))


def test_evaluate_rebuilds_a_checkpoint_of_an_older_or_resumed_run(impala_classic_config, tmp_path):
    """A config saved before `agent_name` existed names its agent by the checkpoint's
    experiment; the training run's resume source (rotated away since) is not needed."""
    config = impala_classic_config()
    saved = json.loads(config.to_json())
    del saved["agent_name"]
    saved["resume"] = str(tmp_path / "gone" / "checkpoints" / "7")
    _save_untrained(config, str(tmp_path / "old" / "checkpoints"), saved=saved)
    policy = evaluate.load_policy(str(tmp_path / "old"))
    assert policy.sections.spec.name == "impala" and "agent_name" not in policy.config
    report = evaluate.main([str(tmp_path / "old"), "--episodes", "2", "--num_envs", "2"])
    assert report["experiment"] == "impala" and report["episodes"] == 2

    # Neither an agent_name nor an experiment that is an agent: one error saying what to do.
    _save_untrained(config, str(tmp_path / "mine" / "checkpoints"), experiment="my_run",
                    saved=saved)
    with pytest.raises(ValueError, match="experiment 'my_run' is not a registered agent"):
        evaluate.load_policy(str(tmp_path / "mine"))


def test_evaluate_trained_cartpole_beats_untrained(impala_classic_config, tmp_path):
    # ~150k steps: the 100-game training mean (sampled actions) passes ~150 by then.
    config = impala_classic_config(total_env_steps=150_000)
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
