"""In-training evaluation (sebulba/evaluation.py): whole games with the parameters of an update,
played beside training, logged as eval/*; never blocks or hangs the run."""
import json
import threading
import time

import jax
import numpy as np
import pytest

from agents import evaluation
from experiments import impala_atari
from podracer.evaluation import PeriodicEvaluator
from sebulba.envs import TimeStep
from sebulba.evaluation import play as host_play
from tests.helpers import classic_config, read_metrics


def test_training_logs_periodic_greedy_evaluations(tmp_path):
    config = classic_config(tmp_path, total_env_steps=40_000, eval_every_updates=40,
                            eval_episodes=6, eval_num_envs=3)
    impala_atari.run(config)  # 256 steps per update: 156 updates, evaluations at 40, 80, 120
    rows = read_metrics(tmp_path / "run")
    evals = [r for r in rows if "eval/return_mean" in r]
    assert 1 <= len(evals) <= 3, evals  # one may be skipped or cut off by the end of the run
    for r in evals:
        assert r["eval/update"] % 40 == 0 and r["step"] == r["eval/update"] * 256
        assert r["eval/episodes"] == 6
        # CartPole pays 1 per step: the true game return is the game length, so this pins the
        # episode accounting (reset steps not counted, whole games).
        assert r["eval/return_mean"] == pytest.approx(r["eval/length_mean"])
        assert 8 <= r["eval/return_min"] <= r["eval/return_mean"] <= r["eval/return_max"] <= 500
    assert not any("sps" in r for r in evals)  # evaluation rows are their own
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["eval/return_mean"] == evals[-1]["eval/return_mean"]  # for sweep --metric


def test_eval_actor_kinds_and_errors():
    with pytest.raises(ValueError, match="evaluation policy 'best'"):
        evaluation.eval_actor("best", None, None, None, 1)
    with pytest.raises(ValueError, match="needs the agent's actor_params to be"):
        evaluation.eval_actor("greedy", None, None, {"w": 1}, 1)


class _EndlessEnv:
    """Games that never end, for an evaluation that is still playing when the run stops."""

    num_envs = 2

    def __init__(self, num_envs, seed):
        self.num_envs = num_envs

    def reset(self):
        return np.zeros((self.num_envs, 1), np.float32)

    def step(self, action):
        z = np.zeros(self.num_envs, bool)
        return TimeStep(self.reset(), np.ones(self.num_envs, np.float32), z, z, z)

    def close(self):
        pass


class _SlowActor:
    def act(self, obs, key):
        time.sleep(0.01)
        return np.zeros(len(obs), np.int32)

    def observe(self, terminated, truncated):
        pass


class _Logger:
    enabled = True

    def __init__(self):
        self.rows = []

    def write(self, step, scalars, console=True):
        self.rows.append((step, scalars))


def test_busy_evaluator_skips_and_close_stops_it_promptly():
    logger = _Logger()
    def play(ap, seed, should_stop):  # Sebulba's game loop on games that never end
        return host_play(lambda n: _SlowActor(), _EndlessEnv, 2, 2, seed, should_stop)
    ev = PeriodicEvaluator(play=play, actor_params=lambda s: s, logger=logger, every_updates=5,
                           episodes=2)
    state = {"w": jax.numpy.ones(3)}
    ev.on_update(3, 300, state)   # not a multiple of 5: nothing
    assert threading.active_count() and ev._thread is None
    ev.on_update(5, 500, state)   # starts an evaluation that never finishes
    ev.on_update(10, 1000, state)  # still playing: skipped, not queued
    assert ev.skipped == 1
    start = time.perf_counter()
    ev.close()
    assert time.perf_counter() - start < 2.0 and not ev._thread.is_alive()
    assert logger.rows == [] and ev.completed == 0  # partial games are not logged
