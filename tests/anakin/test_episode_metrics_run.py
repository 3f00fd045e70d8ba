"""env.episode_metrics under the Anakin runtime, end to end through the wiring
(experiments/train.py): a JAX env's step info reduced over each game on the device and logged
as episode/<name> beside the return, in greedy evaluation as eval/<name>, per member in a
population; "auto" takes the judged fields the env reports; a field it does not report stops
the run in one line naming those it does."""
import functools
import json

import numpy as np
import pytest

from experiments import train
from podracer.validation import ConfigError
from tests.fakes import scored_env
from tests.helpers import read_metrics

T, B = 16, 8
TERMS = ("rewards/progress", "rewards/cost", "rewards/crash")


@pytest.fixture
def scored(ppo_gymnax_config):
    """PPO on tests/fakes/scored_env.py, B envs x T steps, no checkpoints."""
    return functools.partial(ppo_gymnax_config, num_envs=B, unroll_length=T,
                             **{"env.name": scored_env.NAME, "agent.num_minibatches": 2,
                                "checkpoint_every_minutes": 0.0, "checkpoint_keep": 0})


def test_a_run_logs_the_crash_rate_and_the_reward_terms(scored, tmp_path):
    train.run(scored(total_env_steps=T * B * 4, eval_every_updates=2,
                     eval_episodes=6, eval_num_envs=3,
                     **{"env.episode_metrics": "crashed:max,rewards.*:sum"}))
    rows = read_metrics(tmp_path / "run")
    last = [r for r in rows if "updates" in r][-1]  # training's rows (not evaluation's)
    assert 0.0 < last["episode/crashed"] < 1.0  # some of the window's games crashed
    # Means over the same window of games: the terms add up to the return.
    assert sum(last[f"episode/{t}"] for t in TERMS) == pytest.approx(
        last["episode/return_mean"], rel=1e-4)
    assert last["episode/rewards/crash"] == pytest.approx(-last["episode/crashed"])
    evals = [r for r in rows if "eval/return_mean" in r]
    assert evals and all(0.0 <= r["eval/crashed"] <= 1.0 for r in evals)
    assert sum(evals[-1][f"eval/{t}"] for t in TERMS) == pytest.approx(
        evals[-1]["eval/return_mean"], rel=1e-4)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["episode/crashed"] == last["episode/crashed"]


def test_auto_takes_the_judged_fields_the_env_reports(scored, tmp_path):
    train.run(scored(total_env_steps=T * B * 2))  # env.episode_metrics="auto"
    last = read_metrics(tmp_path / "run")[-1]
    assert {"episode/crashed", "episode/speed"} <= set(last)
    assert not any(k.startswith("episode/rewards") for k in last)
    assert 0.25 <= last["episode/speed"] <= 1.0  # walking 0.25, running 1 per step


def test_a_field_the_env_does_not_report_is_refused_in_one_line(scored):
    with pytest.raises(ConfigError) as e:
        train.run(scored(total_env_steps=T * B,
                         **{"env.episode_metrics": "lane:max"}))
    assert str(e.value) == (
        "env.episode_metrics='lane:max': episode metric lane:max: env.name="
        f"'{scored_env.NAME}' does not report a field 'lane' in its info; it reports: "
        "crashed, rewards.cost, rewards.crash, rewards.progress, speed.")


def test_each_member_of_a_population_logs_its_own(scored, tmp_path):
    result = train.run(scored(total_env_steps=T * B * 3, num_seeds=2,
                              **{"env.episode_metrics": "crashed:max,speed:mean"}))
    members = sorted((tmp_path / "run" / "members").iterdir())
    assert len(members) == len(result.members) == 2
    last = [read_metrics(m)[-1] for m in members]
    for row in last:
        assert 0.0 <= row["episode/crashed"] <= 1.0 and 0.25 <= row["episode/speed"] <= 1.0
    assert not np.allclose([r["episode/return_mean"] for r in last][0],
                           [r["episode/return_mean"] for r in last][1])  # two seeds' games
