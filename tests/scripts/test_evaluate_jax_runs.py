"""scripts/evaluate.py and render.py on runs of JAX-native envs (Anakin) and on population
members (`num_seeds`, `vary`: one checkpoint with a member axis)."""
import json
import re

import imageio.v3 as iio
import jax
import numpy as np
import pytest

from experiments import train
from experiments.configs import ppo_gymnax
from podracer import checkpoint
from podracer.validation import ConfigError
from scripts import evaluate, render
from tests.helpers import quiet_config

_SMALL = dict(num_envs=8, unroll_length=16, total_env_steps=8 * 16 * 2, checkpoint_keep=1,
              **{"agent.num_minibatches": 2})


def _run(path, **overrides):
    config = quiet_config(ppo_gymnax.get_config(), path, **{**_SMALL, **overrides})
    return str(path), train.run(config)


@pytest.fixture(scope="module")
def population_result(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("population") / "run", num_seeds=2,
                vary="agent.learning_rate=[1e-3, 3e-4]")


@pytest.fixture(scope="module")
def population_run(population_result):
    return population_result[0]


@pytest.fixture(scope="module")
def minatar_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("minatar") / "run",
                **{"env.name": "gymnax:Breakout-MinAtar"})[0]


def test_evaluate_plays_a_gymnax_run_as_anakin_does(minatar_run, tmp_path):
    report = evaluate.main([minatar_run, "--episodes", "4", "--num_envs", "2",
                            "--output", str(tmp_path / "e.json")])
    assert report["env"] == "gymnax:Breakout-MinAtar" and report["episodes"] == 4
    assert report["updates"] == 2 and "member" not in report
    assert all(r >= 0 for r in report["returns"]) and min(report["lengths"]) >= 1
    with pytest.raises(SystemExit) as exit_:  # EnvPool's settings, not a JAX env's
        evaluate.main([minatar_run, "--episodes", "1", "--noop_max", "30"])
    assert exit_.value.code == 2


def test_render_records_a_minatar_run_from_its_observations(minatar_run, tmp_path, capsys):
    path = render.main([minatar_run, "--output", str(tmp_path / "m.gif"), "--max_frames", "12",
                        "--scale", "3"])
    assert "no renderer here; recording its observation frames" in capsys.readouterr().out
    frames = iio.imread(path, index=None)
    assert frames.shape[1:] == (30, 30, 3) and 2 <= frames.shape[0] <= 12
    assert frames.std() > 0  # the paddle, ball and bricks in their colours


def test_channel_frames_colour_each_channel_and_keep_rgb():
    obs = np.zeros((4, 4, 3), bool)
    obs[0, 0, 0] = obs[1, 1, 2] = obs[2, 2, 0] = obs[2, 2, 1] = True
    frame = render.channels_frame(obs.astype(np.float32)[..., :2])  # 2 channels: a palette
    assert (frame[3, 3] == 0).all() and not (frame[0, 0] == frame[2, 2]).all()
    rgb = render.channels_frame(np.full((4, 4, 3), 0.5, np.float32))  # 3 channels: RGB
    assert (rgb == 127).all()
    assert render.obs_frame(obs, 2, channels_last=True).shape == (8, 8, 3)


def test_render_says_in_one_line_that_a_gymnax_cartpole_cannot_be_drawn(population_run,
                                                                         capsys):
    with pytest.raises(SystemExit) as exit_:
        render.main([population_run, "--member", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "cannot render gymnax:CartPole-v1" in err and "(4,)" in err
    assert "Traceback" not in err


def test_evaluate_plays_each_member_of_a_population(population_run, tmp_path):
    reports = [evaluate.main([population_run, "--member", str(i), "--episodes", "2",
                              "--num_envs", "2", "--output", str(tmp_path / f"{i}.json")])
               for i in range(4)]
    assert [(r["member"], r["seed_trained"], r["settings"]) for r in reports] == [
        (0, 0, {"learning_rate": 1e-3}), (1, 1, {"learning_rate": 1e-3}),
        (2, 0, {"learning_rate": 3e-4}), (3, 1, {"learning_rate": 3e-4})]
    # A member's own run dir names the same member and plays the same games.
    member_dir = f"{population_run}/members/{reports[3]['member_name']}"
    by_dir = evaluate.main([member_dir, "--episodes", "2", "--num_envs", "2",
                            "--output", str(tmp_path / "dir.json")])
    assert by_dir["member"] == 3 and by_dir["returns"] == reports[3]["returns"]


def test_a_member_plays_with_its_own_parameters(population_result):
    """The restored state is the member's slice of the population's final state (as training
    returned it), not another member's."""
    path, result = population_result
    policy = evaluate.load_policy(path, member=2)
    probe = evaluate.eval_envs(policy.sections)(1, 0)
    obs = probe.reset()
    ckpt = checkpoint.resolve(path)
    for i in range(4):
        _, _, state = evaluate.load_agent_state(ckpt, policy.sections, obs, probe.action_space,
                                                member=i, size=4)
        for got, trained in zip(jax.tree.leaves(state), jax.tree.leaves(result.learner_state)):
            if jax.dtypes.issubdtype(got.dtype, jax.dtypes.prng_key):
                got, trained = jax.random.key_data(got), jax.random.key_data(trained)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(trained)[i])


def test_a_population_without_a_member_lists_the_members(population_run, capsys):
    with pytest.raises(ValueError, match=r"population of 4 members .* --member I .*members: "
                                         r"0 \(seed 0, learning_rate=0.001\), 1 \(seed 1, "):
        evaluate.load_policy(population_run)
    with pytest.raises(SystemExit) as exit_:
        evaluate.main([population_run, "--member", "4"])
    assert exit_.value.code == 2 and "--member 4 is out of range" in capsys.readouterr().err


def test_the_population_refusal_of_periodic_evaluation_names_a_command_that_works(
        population_run, ppo_gymnax_config, tmp_path):
    with pytest.raises(ConfigError) as error:
        train.run(ppo_gymnax_config(num_seeds=2, eval_every_updates=5))
    command = re.search(r"`python -m (scripts.evaluate) (\S+) --member I`", str(error.value))
    assert command is not None, error.value
    args = [population_run if a == "<run_dir>" else a for a in command.group(2).split()]
    report = evaluate.main(args + ["--member", "1", "--episodes", "1", "--num_envs", "1",
                                   "--output", str(tmp_path / "e.json")])
    assert report["member"] == 1 and json.loads((tmp_path / "e.json").read_text()) == report


def test_evaluate_plays_held_out_scenarios_in_a_table(tmp_path, capsys):
    """A run trained on pole lengths in [0.3, 0.9) played on 2.0 (never drawn) and on the
    fixed default, on the same seeds: one row each, each with its own drawn lengths."""
    run, _ = _run(tmp_path / "run", **{"env.randomize": "length=uniform(0.3, 0.9)",
                                       "env.episode_metrics": "scenario.length:last"})
    report = evaluate.main([run, "--episodes", "6", "--num_envs", "3", "--scenario",
                            "length=choice(2.0)", "--scenario", "none",
                            "--output", str(tmp_path / "e.json")])
    assert 0.3 <= report["episode_metrics"]["scenario/length"] < 0.9
    held_out, fixed = report["scenarios"]
    assert held_out["scenario"] == "length=choice(2.0)" and held_out["episodes"] == 6
    assert held_out["episode_metrics"]["scenario/length"] == pytest.approx(2.0)
    assert fixed["scenario"] == "none" and "episode_metrics" not in fixed
    out = capsys.readouterr().out
    assert "| trained: length=uniform(0.3, 0.9) | 6 |" in out
    assert "| length=choice(2.0) | 6 |" in out and "| none | 6 |" in out
    assert json.loads((tmp_path / "e.json").read_text())["scenarios"] == report["scenarios"]
    with pytest.raises(SystemExit) as exit_:  # a field gymnax CartPole cannot vary
        evaluate.main([run, "--episodes", "1", "--scenario", "mass=choice(1.0)"])
    assert exit_.value.code == 2
    assert "cannot vary 'mass'" in capsys.readouterr().err
