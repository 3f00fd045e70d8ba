"""Faults during a run: broken envs, non-finite updates, stalls. Each test asserts the message
(which actor, env and step; which metric) and that the run ends within a bounded time.

Bad configs are in test_validation.py; SIGTERM/Ctrl-C in tests/slow/sebulba/test_shutdown.py, a
stalled env in tests/slow/sebulba/test_stalled_env.py.
"""
import dataclasses
import json
import re
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import impala_atari
from sebulba.env_guard import EnvFault
from podracer.finite import NonFiniteError
from sebulba.pipeline import Lifetime, ParamsSource, Stopped
from tests.helpers import agent_with, restore_run
from tests.fakes.faulty_env import faulty


@pytest.fixture
def small(impala_classic_config):
    """One actor thread of 4 CartPole envs, 8 steps per rollout, learner on device 0."""
    base = dict(num_actor_threads=1, num_envs=4, unroll_length=8, total_env_steps=32 * 30,
                join_timeout_s=5.0)
    return lambda under="", **overrides: impala_classic_config(under, **{**base, **overrides})


def _run(config, **kwargs):
    return impala_atari.run(config, **kwargs)


ENV_FAULTS = [  # (fault, at step, env index, message regex)
    ("raise", 5, 0, r"actor-0: env\.step\(\) raised at step 5 of its pool: "
                    r"RuntimeError\('injected env failure'\)"),
    ("nan_obs", 7, 2, r"actor-0: non-finite observation from env\(s\) \[2\] of its pool of 4 "
                      r"at step 7"),
    ("wrong_shape", 3, 0, r"actor-0: observation has shape \(4, 5\) .* at step 3; reset "
                          r"returned \(4, 4\)"),
]


@pytest.mark.parametrize("fault, at_step, env_index, match", ENV_FAULTS,
                         ids=[f[0] for f in ENV_FAULTS])
def test_env_fault_stops_run_naming_env_and_step(small, fault, at_step, env_index, match):
    start = time.time()
    with pytest.raises(RuntimeError, match=r"thread 'actor-0' failed") as info:
        _run(small(), wrap_env=faulty(fault, at_step, env_index))
    assert time.time() - start < 60
    cause = info.value.__cause__
    assert isinstance(cause, EnvFault) and re.search(match, str(cause)), cause


def test_env_restart_recovers_then_gives_up(small, capsys):
    # One faulty pool, one restart allowed: the rebuilt pool trains to the end.
    config = small(restart_envs_on_error=True, max_env_restarts=1)
    result = _run(config, wrap_env=faulty("raise", 5, pools=1))
    assert result.env_steps >= config.total_env_steps
    assert "Rebuilding actor-0's envs (restart 1/1)" in capsys.readouterr().out
    # Every pool faulty: gives up after the allowed restarts, naming the cap.
    config = small(under="again", restart_envs_on_error=True, max_env_restarts=1)
    with pytest.raises(RuntimeError, match=r"Gave up after 1 env restart\(s\) "
                                           r"\(max_env_restarts=1\)"):
        _run(config, wrap_env=faulty("nan_obs", 5))


def _nan_after(update: int):
    """IMPALA whose new parameters and loss metric turn NaN once the learner has made
    `update` updates (the guard decides on the state; the metric names the cause)."""
    def transform(agent):
        def learn_step(state, rollout, axis_name):
            new_state, metrics = agent.learn_step(state, rollout, axis_name)
            nan = jnp.where(state.update >= update, jnp.nan, 0.0)
            new_state = new_state._replace(params=jax.tree.map(lambda p: p + nan,
                                                               new_state.params))
            return new_state, {**metrics, "loss/total": metrics["loss/total"] + nan}
        return dataclasses.replace(agent, learn_step=learn_step)
    return agent_with(transform)


def test_nonfinite_updates_are_skipped_then_stop_with_last_good_checkpoint(small, tmp_path,
                                                                           capsys):
    config = small(max_nonfinite_updates=3, total_env_steps=32 * 1000)
    start = time.time()
    with pytest.raises(NonFiniteError, match=r"3 non-finite updates in a row "
                                             r"\(max_nonfinite_updates=3; last: loss/total\)"
                                             r".*Checkpoint of the last good learner state: "
                                             r"\S+/checkpoints/6"):
        impala_atari.run(config, agent=_nan_after(3))
    assert time.time() - start < 60
    out = capsys.readouterr().out
    assert out.count("was non-finite (loss/total); skipped, learner state kept") == 3
    assert "(3/3 in a row, 3 in all)" in out
    lines = [json.loads(l) for l in open(tmp_path / "run" / "metrics.jsonl")]
    assert [l["nonfinite/skipped"] for l in lines] == [0, 0, 0, 1, 1, 1]
    # The checkpoint holds the parameters of the 3 good updates, finite; its counter counts
    # all 6 batches (skipped updates advance the counters, podracer/finite.py).
    saved = restore_run(str(tmp_path / "run"))
    assert int(saved.learner_state.update) == 6
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(saved.learner_state.params))
    # A finished run that diverged (a sweep does not rerun it; its table marks it).
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["diverged"]["update"] == 6 and summary["stopped_by"] is None
    assert "3 non-finite updates in a row" in summary["diverged"]["error"]


def test_single_nonfinite_update_is_skipped_and_training_goes_on(small, capsys):
    # Unclipped gradients: the overflowing value loss then poisons Adam's moments (the guard
    # decides on the new state; clipping an infinite norm would only zero the step).
    config = small(total_env_steps=32 * 20, **{"agent.max_grad_norm": 0.0})
    result = _run(config, wrap_env=faulty("huge_reward", 20, pools=1))  # in the 3rd rollout
    assert result.env_steps == 32 * 20
    assert result.last_metrics["nonfinite/total"] == 1.0
    state = result.learner_state
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(state.params))
    assert "was non-finite" in capsys.readouterr().out
    # The skipped update kept the parameters and moments but its counters advanced: the
    # learning-rate schedule (optax's count) counts batches as the runner does, so a resumed
    # run re-stretches it from the right rate (they once lagged by the skipped updates).
    counts = [int(x) for x in jax.tree.leaves(state.opt_state)
              if np.issubdtype(np.asarray(x).dtype, np.integer)]
    assert int(state.update) == result.updates == 20
    assert counts and set(counts) == {20}, counts


def test_actor_waiting_for_params_warns_once_and_stops_promptly(capsys):
    lifetime = Lifetime()
    source = ParamsSource([jax.devices()[0]], lifetime, stall_warning_s=0.3)
    source.publish({"w": jnp.ones(2)}, 0)
    errors = []

    def actor():
        try:
            source.get(jax.devices()[0], min_version=1)  # the learner never publishes it
        except Stopped as e:
            errors.append(e)
    thread = threading.Thread(target=actor, name="actor-7")
    thread.start()
    time.sleep(1.0)
    lifetime.stop()
    thread.join(2.0)
    assert not thread.is_alive() and len(errors) == 1
    out = capsys.readouterr().out
    assert out.count("WARNING: actor-7 has waited") == 1
    assert "parameters version >= 1 (newest: 0; stall_warning_s=0.3)" in out
