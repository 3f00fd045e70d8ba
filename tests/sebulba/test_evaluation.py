"""In-training evaluation (sebulba/evaluation.py): whole games with the parameters of an update,
played beside training, logged as eval/*; never blocks or hangs the run."""
import json
import os
import signal
import threading
import time

import jax
import numpy as np
import pytest

from agents import evaluation
from experiments import impala_atari
from podracer.evaluation import PeriodicEvaluator
from podracer.signals import StopOnSignal
from sebulba.envs import TimeStep
from sebulba.evaluation import play as host_play
from tests.helpers import read_metrics


def test_training_logs_periodic_greedy_evaluations_and_a_final_one(impala_classic_config, tmp_path):
    config = impala_classic_config(total_env_steps=40_000, eval_every_updates=40,
                                   eval_episodes=6, eval_num_envs=3)
    impala_atari.run(config)  # 256 steps per update: 156 updates, evaluations at 40, 80, 120
    rows = read_metrics(tmp_path / "run")
    evals = [r for r in rows if "eval/return_mean" in r]
    # One periodic evaluation may be skipped (the one before still playing); the final
    # policy's is always there, last.
    assert 2 <= len(evals) <= 4, evals
    assert evals[-1]["eval/update"] == 156 and evals[-1]["step"] == 156 * 256
    for r in evals[:-1]:
        assert r["eval/update"] % 40 == 0
    for r in evals:
        assert r["step"] == r["eval/update"] * 256
        assert r["eval/episodes"] == 6
        # CartPole pays 1 per step: the true game return is the game length, so this pins the
        # episode accounting (reset steps not counted, whole games).
        assert r["eval/return_mean"] == pytest.approx(r["eval/length_mean"])
        assert 8 <= r["eval/return_min"] <= r["eval/return_mean"] <= r["eval/return_max"] <= 500
    assert not any("sps" in r for r in evals)  # evaluation rows are their own
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["eval/return_mean"] == evals[-1]["eval/return_mean"]  # for sweep --metric
    assert summary["eval/update"] == 156


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


def _endless_play(ap, seed, should_stop):  # Sebulba's game loop on games that never end
    return host_play(lambda n: _SlowActor(), _EndlessEnv, 2, 2, seed, should_stop)


def test_busy_evaluator_skips_and_close_stops_it_within_its_wait(capsys):
    logger = _Logger()
    ev = PeriodicEvaluator(play=_endless_play, actor_params=lambda s: s, logger=logger,
                           every_updates=5, episodes=2, wait_s=0.5)
    state = {"w": jax.numpy.ones(3)}
    ev.on_update(3, 300, state)   # not a multiple of 5: nothing
    assert threading.active_count() and ev._thread is None
    ev.on_update(5, 500, state)   # starts an evaluation that never finishes
    ev.on_update(10, 1000, state)  # still playing: skipped, not queued
    assert ev.skipped == 1
    ev.final(12, 1200, state)     # the run's last update: evaluated at close, if time is left
    start = time.perf_counter()
    ev.close()
    assert 0.5 <= time.perf_counter() - start < 3.0 and not ev._thread.is_alive()
    assert logger.rows == [] and ev.completed == 0  # partial games are not logged
    assert ev.cut_short == 1
    out = capsys.readouterr().out
    assert "evaluation at update 5 cut short at the run's end" in out
    assert "final policy (update 12) was not evaluated" in out


def test_a_second_ctrl_c_stops_the_wait_for_an_evaluation(capsys):
    """At a run's end the evaluator waits up to eval_wait_s; a second signal to the loop's
    handler (podracer/signals.py) ends the waiting at once."""
    ev = PeriodicEvaluator(play=_endless_play, actor_params=lambda s: s, logger=_Logger(),
                           every_updates=1, episodes=2, wait_s=60.0)
    ev.on_update(1, 10, {"w": np.zeros(1)})
    with StopOnSignal():
        timers = [threading.Timer(t, os.kill, (os.getpid(), signal.SIGINT)) for t in (1.2, 1.7)]
        for t in timers:  # apart: two signals at once may reach the handler as one
            t.start()
        start = time.perf_counter()
        ev.close()
        for t in timers:
            t.join()
    assert time.perf_counter() - start < 10.0 and not ev._thread.is_alive()
    out = capsys.readouterr().out
    assert "waiting up to" in out and "cut short" in out


class _TimedPlay:
    """Games that take `seconds`, recording the parameters and seeds they were played with."""

    def __init__(self, seconds):
        self.seconds, self.played = seconds, []

    def __call__(self, ap, seed, should_stop):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            if should_stop():
                return [], []
            time.sleep(0.01)
        self.played.append(ap)
        return [float(ap["w"])] * 2, [3, 3]


def test_close_waits_for_the_evaluation_in_flight_then_evaluates_the_final_policy():
    """The run's end no longer drops the evaluation still playing, and the final policy is
    evaluated even when its update is not a multiple of every_updates."""
    logger, play = _Logger(), _TimedPlay(0.3)
    ev = PeriodicEvaluator(play=play, actor_params=lambda s: s, logger=logger,
                           every_updates=5, episodes=2, wait_s=30.0)
    ev.on_update(5, 500, {"w": np.float32(1.0)})
    ev.final(7, 700, {"w": np.float32(2.0)})  # the run ends while update 5's games play
    ev.close()
    assert [(step, r["eval/update"], r["eval/return_mean"]) for step, r in logger.rows] == [
        (500, 5, 1.0), (700, 7, 2.0)]
    assert ev.last["eval/update"] == 7 and ev.completed == 2 and ev.cut_short == 0


def test_a_final_update_already_evaluated_is_not_played_twice():
    logger, play = _Logger(), _TimedPlay(0.0)
    ev = PeriodicEvaluator(play=play, actor_params=lambda s: s, logger=logger,
                           every_updates=5, episodes=2)
    ev.on_update(10, 1000, {"w": np.float32(3.0)})
    ev.final(10, 1000, {"w": np.float32(3.0)})
    ev.close()
    assert [r["eval/update"] for _, r in logger.rows] == [10] and len(play.played) == 1


def test_warm_up_plays_one_chunk_before_the_first_evaluation():
    """The warm-up compiles the game loop before training needs it: one call of play that
    stops at its first check after one chunk; the first evaluation waits for it."""
    calls = []

    def play(ap, seed, should_stop):
        calls.append([should_stop() for _ in range(2)])
        return [1.0, 1.0], [1, 1]
    logger = _Logger()
    ev = PeriodicEvaluator(play=play, actor_params=lambda s: s, logger=logger,
                           every_updates=1, episodes=2)
    ev.warm_up(lambda: {"w": jax.numpy.zeros(2)})
    ev.on_update(1, 10, {"w": np.zeros(2)})
    ev.close()
    assert calls[0] == [False, True] and len(calls) == 2 and len(logger.rows) == 1


def test_a_failed_warm_up_turns_evaluation_off(capsys):
    def play(ap, seed, should_stop):
        raise RuntimeError("no such env")
    ev = PeriodicEvaluator(play=play, actor_params=lambda s: s, logger=_Logger(),
                           every_updates=1, episodes=2)
    ev.warm_up({"w": np.zeros(2)})
    ev._warm.join()
    assert not ev.due(1)
    assert "evaluation warm-up failed (RuntimeError('no such env'))" in capsys.readouterr().out


def test_evaluation_seeds_are_disjoint_from_trainings(monkeypatch):
    """Sebulba: evaluation plays env seeds EVAL_SEED + update % 2**19 + i (i < its envs);
    training's are below: the run seed is < 2**30 (RuntimeConfig refuses more), a resumed
    run's base too, and the actor threads' offsets keep them below EVAL_SEED up to 64 actor
    threads x 64 processes (the largest layout checked here; about 107 processes would reach
    it). Anakin (seeds < 2**31): training's env keys come from fold_in(key(seed), constant),
    evaluation's from split(key(EVAL_SEED + u)): even a run seeded EVAL_SEED draws other keys."""
    from podracer.evaluation import EVAL_SEED
    from sebulba import runner
    from sebulba.runtime_config import RuntimeConfig
    with pytest.raises(ValueError, match=r"seed=1073741824 must be in \[0, 2\*\*30\)"):
        RuntimeConfig(seed=2**30)
    monkeypatch.setattr(runner.jax, "process_index", lambda: 63)
    highest = max(runner.actor_seed(seed, 63, update) for seed in (0, 2**30 - 1)
                  for update in (0, 1, 12_345, 2**31 - 1))
    envs_per_thread = 2**16
    assert highest + envs_per_thread < EVAL_SEED
    assert EVAL_SEED + 2**19 + envs_per_thread < 2**31  # int32, as EnvPool needs
    from anakin import key_streams
    n = 8
    train_keys = jax.random.split(key_streams.runner_key(EVAL_SEED, 0), n)
    eval_keys = jax.random.split(jax.random.key(EVAL_SEED), n)
    trained = {tuple(np.asarray(jax.random.key_data(k)).tolist()) for k in train_keys}
    played = {tuple(np.asarray(jax.random.key_data(k)).tolist()) for k in eval_keys}
    assert not trained & played
