"""scripts/plot.py's wall-clock axis is training time: a run continued with --config.resume
(pieces hours apart) is drawn without the pause between its pieces."""

import numpy as np
import pytest
import tensorboardX.event_file_writer

import podracer.logging
from scripts.analysis import rundir
from podracer.logging import MetricsLogger


def test_training_time_leaves_out_the_time_between_pieces():
    # Rows at wall-clock 10, 11, 12 (piece 1, started at 9), 100, 101 (piece 2, started at
    # 99) and 200, 201 (a piece started at 150 crashed before logging a row; the one started
    # at 199.5 logged these). Counted: 1 + 1 + 1, then 1 + 1 (from 99), then 0.5 + 1.
    t = rundir.training_time([10, 11, 12, 100, 101, 200, 201], [9, 99, 150, 199.5])
    assert t == pytest.approx([1, 2, 3, 4, 5, 5.5, 6.5])
    # One piece: plain wall clock since its start (or since the first row without a stamp).
    assert rundir.training_time([10, 12, 15], [8]) == pytest.approx([2, 4, 7])
    # A session that ended before its first update (started at 3) adds nothing.
    assert rundir.training_time([10, 12, 15], [3, 8]) == pytest.approx([2, 4, 7])
    assert rundir.training_time([10, 12, 15], []) == pytest.approx([0, 2, 5])


class _Clock:
    """A settable clock for the logger's row times and tensorboardX's event-file names."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def time_ns(self) -> int:
        return int(self.now * 1e9)


def test_a_resumed_run_logged_a_day_later_has_no_gap_on_the_time_axis(tmp_path, monkeypatch):
    clock = _Clock(1_800_000_000.0)
    monkeypatch.setattr(podracer.logging, "time", clock)
    monkeypatch.setattr(tensorboardX.event_file_writer, "time", clock)

    def piece(steps, resume_step=None):
        logger = MetricsLogger(str(tmp_path), 100, console_every_s=1e9,
                               resume_step=resume_step)
        for step in steps:  # 2 s of start-up, then 10 s per update
            clock.now += 2.0 if step == steps[0] else 10.0
            logger.write(step, {"episode/return_mean": float(step)})
        logger.close()

    piece([10, 20, 30])
    clock.now += 86_400.0  # resumed the next day
    piece([40, 50], resume_step=30)

    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2
    curve = rundir.load_curve(str(tmp_path), "episode/return_mean")
    assert curve["step"].tolist() == [10, 20, 30, 40, 50]
    # Each piece counts from its own start: 2, 12, 22 s, then 22 + 2, 22 + 12.
    assert np.allclose(curve["time"], [2, 12, 22, 24, 34])
