"""Anakin with `updates_per_call` = K > 1 (anakin/loop.py): every update of a fused call counts,
logs and triggers the cadence as if it ran alone. Before, the counter jumped by K per call, so
checkpoints and evaluations came only at multiples of lcm(K, N), the non-finite guard saw only
each call's last update, and only that update's metrics were logged."""
import dataclasses
import functools
import json
import os

import numpy as np

import jax
import jax.numpy as jnp
import pytest

from experiments import train
from anakin.call_pace import CallPace
from podracer import checkpoint
from podracer.finite import NonFiniteError
from tests.helpers import agent_with, read_metrics

T, B = 8, 8


@pytest.fixture
def fused(ppo_gymnax_config):
    """B envs x T steps, one epoch of 2 minibatches, 4 updates per call, no timed checkpoints."""
    return functools.partial(ppo_gymnax_config, num_envs=B, unroll_length=T,
                             **{"agent.num_minibatches": 2, "agent.num_epochs": 1,
                                "updates_per_call": 4, "call_target_s": 0.0,
                                "checkpoint_every_minutes": 0.0})


class _Hook:
    """An on_update hook that says when it is due (as the evaluator does): it must see
    exactly its updates, each with that update's own state."""

    def __init__(self, every: int) -> None:
        self.every, self.seen = every, []

    def due(self, update: int) -> bool:
        return update % self.every == 0

    def __call__(self, update, env_steps, state):
        if self.due(update):
            self.seen.append((update, env_steps, int(state.update)))


def test_every_fused_update_is_logged_checkpointed_and_hooked(fused, tmp_path):
    hook = _Hook(every=5)
    config = fused(total_env_steps=T * B * 13, checkpoint_every_updates=3,
                   checkpoint_keep=10)
    result = train.run(config, on_update=hook)
    assert result.updates == 13 and result.env_steps == 13 * T * B
    rows = read_metrics(tmp_path / "run")
    assert [r["updates"] for r in rows] == list(range(1, 14))  # one row per update
    assert [r["step"] for r in rows] == [T * B * u for u in range(1, 14)]
    assert len({r["loss/total"] for r in rows}) == 13  # each update's own metrics
    # Checkpoints at every multiple of 3 (and the final one), not of lcm(4, 3) = 12 only.
    steps = checkpoint.list_steps(os.path.join(tmp_path, "run", "checkpoints"))
    assert steps == [3, 6, 9, 12, 13]
    for step in (3, 6, 9):
        meta = checkpoint.load_metadata(os.path.join(tmp_path, "run", "checkpoints", str(step)))
        assert (meta["updates"], meta["env_steps"]) == (step, step * T * B)
    # The hook saw updates 5 and 10 with their own states (not lcm(4, 5) = 20: never).
    assert hook.seen == [(5, 5 * T * B, 5), (10, 10 * T * B, 10)]


def _nan_at(updates: set[int]):
    """PPO whose update number u (1-based) in `updates` makes non-finite parameters."""
    def transform(agent):
        def learn_step(state, rollout, axis_name):
            new_state, metrics = agent.learn_step(state, rollout, axis_name)
            bad = jnp.isin(state.update + 1, jnp.asarray(sorted(updates)))
            nan = jnp.where(bad, jnp.nan, 0.0)
            return new_state._replace(params=jax.tree.map(lambda p: p + nan,
                                                           new_state.params)), metrics
        return dataclasses.replace(agent, learn_step=learn_step)
    return agent_with(transform, "ppo")


def test_a_skipped_update_inside_a_fused_call_is_counted(fused, tmp_path, capsys):
    config = fused(total_env_steps=T * B * 8, checkpoint_keep=0)
    result = train.run(config, agent=_nan_at({2}))
    rows = read_metrics(tmp_path / "run")
    assert [r["nonfinite/skipped"] for r in rows] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert [r["nonfinite/total"] for r in rows] == [0, 1, 1, 1, 1, 1, 1, 1]
    assert result.last_metrics["nonfinite/total"] == 1.0
    assert "update 2 at env step 128 was non-finite" in capsys.readouterr().out


def test_nonfinite_updates_in_a_row_are_counted_in_updates_not_calls(fused, tmp_path):
    """The stop comes at update 7 (the third in a row), inside the call of updates 5-8. The
    call of 9-12 was sent before that call was read (the loop runs one call ahead), and its
    input state was donated to it: the checkpoint is its end, and every row up to it is
    logged, so the checkpoint and metrics.jsonl agree."""
    config = fused(total_env_steps=T * B * 40, max_nonfinite_updates=3,
                   checkpoint_keep=1)
    with pytest.raises(NonFiniteError, match=r"3 non-finite updates in a row .*stopped at env "
                                             r"step 448\. Checkpoint of the last good learner "
                                             r"state \(update 12, env step 768\): "
                                             r"\S+/checkpoints/12\.$"):
        train.run(config, agent=_nan_at({5, 6, 7}))
    rows = read_metrics(tmp_path / "run")
    assert [r["nonfinite/skipped"] for r in rows] == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0]
    assert rows[-1]["step"] == 768
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["updates"], summary["diverged"]["update"]) == (12, 12)


def test_call_pace_fits_calls_to_the_target_from_the_last_call():
    pace = CallPace(16, target_s=0.25)
    assert pace.next_length() == 1              # the first call compiles: one update
    pace.observe(1, 9.0)                        # ... and took 9 s
    assert pace.next_length() == 1
    pace.observe(1, 0.004)                      # 4 ms per update: K (capped)
    assert pace.next_length() == 16
    pace.observe(16, 16 * 0.1)                  # 100 ms per update: 2 fit in 0.25 s
    assert pace.next_length() == 2
    pace.observe(2, 2 * 3.0)                    # slower than the target: one at a time
    assert pace.next_length() == 1
    assert CallPace(16, target_s=0.0).next_length() == 16  # 0: always K
    assert CallPace(1, target_s=0.25).next_length() == 1


@pytest.mark.parametrize("target_s", [1e-9, 1e9])
def test_paced_calls_learn_exactly_what_one_update_per_call_learns(fused, tmp_path, target_s):
    """The call lengths depend on the clock; the updates must not."""
    steps = T * B * 7
    one = train.run(fused(under="one", total_env_steps=steps, updates_per_call=1,
                          checkpoint_keep=0))
    paced = train.run(fused(under="paced", total_env_steps=steps, checkpoint_keep=0,
                            call_target_s=target_s))
    assert paced.updates == one.updates == 7
    np.testing.assert_allclose(
        np.concatenate([np.ravel(x) for x in jax.tree.leaves(paced.learner_state.params)]),
        np.concatenate([np.ravel(x) for x in jax.tree.leaves(one.learner_state.params)]),
        rtol=1e-5, atol=1e-6)
    rows_one = read_metrics(tmp_path / "one" / "run")
    rows_paced = read_metrics(tmp_path / "paced" / "run")
    assert [r["loss/total"] for r in rows_paced] == pytest.approx(
        [r["loss/total"] for r in rows_one], rel=1e-5, abs=1e-6)


def test_running_ahead_learns_exactly_what_the_loop_learns_when_it_reads_every_call(fused,
                                                                                    tmp_path):
    """Without a hook the loop sends each call before reading the one in flight; a plain
    on_update hook wants every call's state, so the loop then reads each call first. The
    updates, the final state and the rows are the same either way."""
    steps = T * B * 6
    seen = []
    read_first = train.run(fused(under="read", total_env_steps=steps,
                                 updates_per_call=1, checkpoint_keep=0),
                           on_update=lambda update, env_steps, state: seen.append(update))
    ahead = train.run(fused(under="ahead", total_env_steps=steps, updates_per_call=1,
                            checkpoint_keep=0))
    assert seen == [1, 2, 3, 4, 5, 6] and ahead.updates == 6
    for a, b in zip(*(jax.tree.leaves(r.learner_state) for r in (ahead, read_first))):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    rows = [read_metrics(tmp_path / name / "run") for name in ("read", "ahead")]
    for key in ("step", "loss/total", "updates", "nonfinite/total"):
        assert [r[key] for r in rows[1]] == pytest.approx([r[key] for r in rows[0]],
                                                          rel=1e-5, abs=1e-6), key


def test_a_timed_checkpoint_is_taken_at_a_call_the_loop_read_first(fused, tmp_path):
    """A checkpoint due by time needs the state of the call that ends when it is due: the loop
    then reads that call before sending the next. Due at every call here: each call's end
    (calls of 4) is saved, none is skipped by running ahead."""
    train.run(fused(total_env_steps=T * B * 12, checkpoint_every_minutes=1e-9,
                    checkpoint_every_updates=0, checkpoint_keep=10))
    saved = sorted(int(p.name) for p in (tmp_path / "run" / "checkpoints").iterdir()
                   if p.name.isdigit())
    assert saved == [4, 8, 12]
