"""The update count a run announces is the count it runs, and the learning-rate schedule
carries across resumes (docs/checkpoints.md): the same horizon gives the very same rates as an
uninterrupted run, a longer one continues from the checkpoint's rate without a jump, with its
agent built once for that horizon."""
import os
import signal

import jax
import numpy as np

from agents import schedules
from experiments import impala_atari
from experiments.wiring.build import build_agent
from podracer import checkpoint
from tests.helpers import read_metrics


def _run(config, **kwargs):
    return impala_atari.run(config, **kwargs)


def _rates(run_dir) -> dict[int, float]:
    lines = read_metrics(run_dir)
    return {line["step"]: line["optim/learning_rate"] for line in lines}


def test_announced_update_count_is_run_and_the_last_rate_is_positive(impala_classic_config, capsys):
    # 1000 steps at 256 per update: 3 whole updates (768 steps); it used to run a 4th at a
    # negative rate (-2.98e-11) and print a negative ETA.
    config = impala_classic_config(total_env_steps=1000)
    result = _run(config)
    out = capsys.readouterr().out
    assert "(3 updates of 256 steps)" in out
    assert (result.updates, result.env_steps) == (3, 768)
    rates = _rates(config.run_dir)
    assert sorted(rates) == [256, 512, 768]
    assert all(r > 0 for r in rates.values()), rates
    lr = config.agent.learning_rate
    np.testing.assert_allclose(rates[768], lr / 3, rtol=1e-5)  # lr * (1 - 2/3)
    last = [line for line in out.splitlines() if "steps " in line and " eta " in line][-1]
    assert "768/768" in last and last.endswith("eta 0:00:00"), last


def _stop_after(update: int):
    def on_update(done, env_steps, state):
        if done == update:  # like a pre-emption: finish this update, checkpoint, stop
            os.kill(os.getpid(), signal.SIGTERM)
    return on_update


def test_resume_keeps_or_restretches_the_learning_rate_schedule(
        impala_classic_config, monkeypatch):
    whole = impala_classic_config(under="whole", total_env_steps=4096)  # 16 updates
    _run(whole)
    reference = _rates(whole.run_dir)

    # Split into two sessions, same total: the very same rates, bit for bit.
    split = impala_classic_config(under="split", total_env_steps=4096)
    first = _run(split, on_update=_stop_after(8))
    assert (first.stopped_by, first.updates) == ("SIGTERM", 8)
    resumed = impala_classic_config(under="split", total_env_steps=4096, resume=split.run_dir)
    assert _run(resumed).updates == 16
    assert _rates(split.run_dir) == reference

    # A finished 8-update run extended to 16: from the last rate (lr / 8), linearly to 0 at
    # update 16; it used to jump to lr * (1 - 8/16) = lr / 2.
    short = impala_classic_config(under="short", total_env_steps=2048)
    _run(short)
    longer = impala_classic_config(under="short", total_env_steps=4096, resume=short.run_dir)
    from experiments.wiring import session
    built = []  # the resumed run builds its agent once, for the re-stretched horizon
    monkeypatch.setattr(session, "build_agent",
                        lambda *a, **k: built.append(a[2]) or build_agent(*a, **k))
    result = _run(longer)
    horizon = schedules.Horizon.from_dict(checkpoint.load_metadata(result.checkpoint)
                                          ["lr_horizon"])
    assert [h.to_dict() for h in built] == [horizon.to_dict()] and not horizon.plain
    rates = [r for _, r in sorted(_rates(short.run_dir).items())]
    assert len(rates) == 16
    last_before = rates[7]
    np.testing.assert_allclose(last_before, short.agent.learning_rate / 8, rtol=1e-5)
    expected = [last_before * (16 - c) / (16 - 7) for c in range(8, 16)]
    np.testing.assert_allclose(rates[8:], expected, rtol=1e-4)
    assert all(r > 0 for r in rates)
    # The logged rate is the schedule at the learner's counter; optax applies it at its own
    # step count. That count must be the update counter (it lagged once: podracer/finite.py),
    # and the schedule the resumed run saved must give the same rates at it.
    state = result.learner_state
    counts = {int(x) for x in jax.tree.leaves(state.opt_state)
              if np.issubdtype(np.asarray(x).dtype, np.integer)}
    assert counts == {int(state.update)} == {16}
    meta = checkpoint.load_metadata(result.checkpoint)
    applied = schedules.linear_decay(longer.agent.learning_rate,
                                     schedules.Horizon.from_dict(meta["lr_horizon"]))
    np.testing.assert_allclose([float(applied(c)) for c in range(8, 16)], expected, rtol=1e-4)
