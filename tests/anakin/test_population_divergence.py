"""A population survives its worst member (anakin/loop.py, anakin/population.py): a member
whose updates stay non-finite is frozen alone, marked diverged in its summary, the run dir's
and the sweep table's, and kept frozen across a resume; the others train on and print the
progress lines; a population where every member diverges stops with every summary written
and its final checkpoint recording them all."""
import json
import os
import re

import jax
import numpy as np
import pytest

from anakin import population
from experiments import train
from podracer import checkpoint
from podracer.finite import NonFiniteError
from scripts import sweep
from tests.helpers import (POPULATION_B as B, POPULATION_T as T, key_data, population_config,
                           read_metrics)


DIVERGING = "agent.learning_rate=[1e30, 0.001]"


def test_a_diverged_member_stops_alone_and_the_others_go_on(tmp_path, capsys):
    """A learning-rate sweep where one rate diverges: that member is frozen at its last good
    state once `max_nonfinite_updates` of its updates in a row were non-finite, marked
    diverged in its summary.json, the run dir's and the sweep table's; the other member
    trains to the end, and prints the progress lines the diverged member 0 printed. A resume
    keeps it frozen (the checkpoint says it diverged)."""
    config = population_config(tmp_path, total_env_steps=T * B * 6, vary=DIVERGING,
                               console_every_s=0.0, max_nonfinite_updates=2,
                               checkpoint_every_updates=1, checkpoint_keep=10)
    result = train.run(config)
    assert (result.updates, result.env_steps) == (6, 6 * T * B)
    run = tmp_path / "run"
    names = sorted(os.listdir(run / "members"))
    lost, healthy = (run / "members" / n for n in names)
    assert [r["updates"] for r in read_metrics(healthy)] == [1, 2, 3, 4, 5, 6]
    lost_rows = read_metrics(lost)
    assert all(r["nonfinite/skipped"] == 1.0 for r in lost_rows[-2:])
    gone = json.loads((lost / "summary.json").read_text())["diverged"]
    assert gone["update"] == lost_rows[-1]["updates"] < 6, (gone, lost_rows)
    assert "2 non-finite updates in a row" in gone["error"]
    assert "diverged" not in json.loads((healthy / "summary.json").read_text())
    out = capsys.readouterr().out
    assert "member 0 diverged: 2 non-finite updates in a row" in out, out
    # A progress line for every update (console_every_s=0): member 0's up to the one that
    # stopped it, then member 1's from that update on (the quiet member printed none before).
    progress = [line for line in out.splitlines() if " steps " in line and " sps " in line]
    steps = [int(re.search(r"steps +([\d,]+)/", line)[1].replace(",", "")) for line in progress]
    assert steps == [T * B * u for u in range(1, 7) if u <= gone["update"]] + [
        T * B * u for u in range(gone["update"], 7)], progress
    # Frozen: its state after the divergence is the same in every later checkpoint.
    states = [checkpoint.restore(str(run / "checkpoints" / str(u)), result.learner_state)
              .learner_state for u in (gone["update"] + 1, 6)]
    frozen = [key_data(population.member_state(s, 0)) for s in states]
    jax.tree.map(np.testing.assert_array_equal, *frozen)
    assert not np.allclose(*(jax.tree.leaves(population.member_state(s, 1).params)[0]
                             for s in states))  # ...while member 1 learned on
    top = json.loads((run / "summary.json").read_text())
    assert [bool(m.get("diverged")) for m in top["members"]] == [True, False]
    assert "episode/return_mean" not in top  # not member 0's statistics, unlabelled
    assert top["aggregate"]["members"] == 1 and top["aggregate"]["diverged"] == 1
    assert top["aggregate"]["episode/return_mean"] == pytest.approx(
        json.loads((healthy / "summary.json").read_text())["episode/return_mean"])
    rows = sweep.main(["table", str(run)])
    out = capsys.readouterr().out
    assert [(r["seeds"], r["of"], r["diverged"]) for r in rows] == [
        (0, 1, [str(lost)]), (1, 1, [])]
    assert "0/1 (1 diverged)" in out and "not counted, diverged" in out, out

    resumed = train.run(population_config(tmp_path, total_env_steps=T * B * 8, vary=DIVERGING,
                                          max_nonfinite_updates=2, resume=str(run)))
    assert resumed.updates == 8
    assert [r["updates"] for r in read_metrics(healthy)][-2:] == [7, 8]
    assert read_metrics(lost) == lost_rows  # frozen across the resume: no new rows
    assert json.loads((lost / "summary.json").read_text())["diverged"] == gone


def test_a_population_where_every_member_diverges_stops_with_every_summary(tmp_path):
    # Two updates: both diverge at the second, in the run's last call, the case where the
    # final checkpoint must still record them (its snapshot was taken before the rows).
    config = population_config(tmp_path, total_env_steps=T * B * 2,
                               vary="agent.learning_rate=[1e30, 1e31]", max_nonfinite_updates=2)
    with pytest.raises(NonFiniteError, match=r"every member diverged \(2 of 2\)"):
        train.run(config)
    run = tmp_path / "run"
    for name in sorted(os.listdir(run / "members")):
        summary = json.loads((run / "members" / name / "summary.json").read_text())
        assert summary["diverged"]["update"] < 8 and summary["stopped_by"] is None
    top = json.loads((run / "summary.json").read_text())
    assert top["aggregate"]["diverged"] == 2
    # The final checkpoint records both, the last one too (it diverged in the last call).
    final = checkpoint.load_metadata(checkpoint.resolve(str(run)))
    assert sorted(final["episodes"]["diverged"]) == ["0", "1"]
