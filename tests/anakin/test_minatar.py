"""MinAtar (gymnax) end to end through Anakin with experiments/configs/ppo_minatar.py: its
`:debug` variant (smoke tests) run as experiments/ppo_gymnax.py runs it, and the default
variant's network and SGD loop (the MinAtar paper's convolution on a shared torso, unrolled
minibatch steps) at small sizes. The run-dir files are checked as scripts/plot.py reads them."""
import json
import math

import jax
import numpy as np
import pytest

from experiments import ppo_gymnax
from experiments.configs import ppo_minatar
from podracer import checkpoint
from tests.helpers import quiet_config, read_metrics

LOSSES = ("loss/total", "loss/policy", "loss/value", "policy/entropy", "optim/grad_norm")


def _check_rows(run, updates: int, steps_per_update: int) -> list[dict]:
    """The run's metrics rows: one per update, every loss finite, nothing skipped."""
    rows = read_metrics(run)
    assert [r["updates"] for r in rows] == list(range(1, updates + 1))
    assert [r["step"] for r in rows] == [steps_per_update * u for u in range(1, updates + 1)]
    for r in rows:
        assert all(math.isfinite(r[k]) for k in LOSSES), r
        assert r["nonfinite/skipped"] == 0 and r["policy_lag/max"] == 0
    assert list(run.glob("events.out.tfevents.*"))  # TensorBoard, beside metrics.jsonl
    return rows


def test_the_debug_variant_trains_on_minatar_breakout(tmp_path):
    """`python experiments/ppo_gymnax.py --config=experiments/configs/ppo_minatar.py:debug`:
    4 envs x 8 steps, 8 updates, on the config's game (gymnax:Breakout-MinAtar)."""
    run = tmp_path / "run"
    result = ppo_gymnax.run(quiet_config(ppo_minatar.get_config("debug"), run))
    assert (result.updates, result.env_steps) == (8, 256)
    rows = _check_rows(run, 8, 4 * 8)
    assert rows[-1]["episode/count"] > 0 and math.isfinite(rows[-1]["episode/return_mean"])
    config = json.loads((run / "config.json").read_text())
    assert config["env"]["name"] == "gymnax:Breakout-MinAtar"
    assert (config["network"]["torso"], config["agent"]["loop"]) == ("minatar_cnn", "unroll")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["runtime"], summary["env_steps"]) == ("anakin", 256)
    assert checkpoint.list_steps(str(run / "checkpoints")) == [8]  # the final checkpoint


def test_the_default_variants_network_and_loop_train_on_minatar(tmp_path):
    """The default variant (the paper's network, purejaxrl's PPO: 8 minibatches of shuffled
    single steps, unrolled; the learning rate decayed over the run) on another game,
    SpaceInvaders (6 channels), with the batch cut to 8 envs x 16 steps and one epoch for 2
    updates: its 4 epochs of 8 unrolled steps compile for ~70 s on 2 cores, one for ~10 s."""
    run = tmp_path / "run"
    config = quiet_config(ppo_minatar.get_config(), run, num_envs=8, unroll_length=16,
                          total_env_steps=256, checkpoint_keep=0,
                          **{"env.name": "gymnax:SpaceInvaders-MinAtar", "agent.num_epochs": 1})
    assert (config.agent.num_minibatches, config.agent.minibatch_axis) == (8, "sample")
    result = ppo_gymnax.run(config)
    assert (result.updates, result.env_steps) == (2, 256)
    rows = _check_rows(run, 2, 8 * 16)
    lr = [r["optim/learning_rate"] for r in rows]  # decayed linearly to 0 over the 2 updates
    assert lr == pytest.approx([5e-3, 2.5e-3])
    # One torso (shared): a 3x3 convolution of 16 channels on the game's 6, a dense layer of
    # 128 units on its 8x8x16 output; then the heads (4 actions, a value).
    shapes = sorted(np.shape(x) for x in jax.tree.leaves(result.learner_state.params))
    assert [s for s in shapes if len(s) == 4] == [(3, 3, 6, 16)]
    assert sorted(s for s in shapes if len(s) == 2) == [(128, 1), (128, 4), (1024, 128)]
