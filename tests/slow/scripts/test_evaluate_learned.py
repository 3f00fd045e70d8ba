"""scripts/evaluate.py tells a trained CartPole agent from an untrained one (a learning run)."""
import json

from experiments import impala_atari
from scripts import evaluate
from tests.helpers import save_untrained


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

    save_untrained(config, str(tmp_path / "untrained" / "checkpoints"))
    baseline = evaluate.main([str(tmp_path / "untrained"), "--episodes", "10"])
    assert baseline["mean"] < 100, baseline
    assert (tmp_path / "untrained" / "eval" / "update0-greedy.json").exists()
