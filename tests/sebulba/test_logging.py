"""MetricsLogger: every scalar reaches TensorBoard; a session resumed in the same run dir keeps
what earlier sessions logged."""
import json
import types

import tensorboardX.event_file_writer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from podracer.logging import MetricsLogger


def _session(run_dir, steps, resume_step=None) -> None:
    logger = MetricsLogger(str(run_dir), 100, console_every_s=1e9, resume_step=resume_step)
    for step in steps:
        logger.write(step, {"loss/total": float(step)})
    logger.close()


def test_a_session_resumed_within_the_same_second_keeps_the_earlier_scalars(tmp_path,
                                                                            monkeypatch):
    # tensorboardX names an event file by the whole second it opens it in, and opens it with
    # "wb": with its clock frozen, both sessions start "in the same second", as a quick resume
    # did once in tests/sebulba/test_checkpoint.py (the first session's scalars were lost).
    monkeypatch.setattr(tensorboardX.event_file_writer, "time",
                        types.SimpleNamespace(time=lambda: 1_800_000_000.5))
    _session(tmp_path, [10, 20, 30])  # crashed after its checkpoint at step 20
    _session(tmp_path, [30, 40], resume_step=20)

    with open(tmp_path / "metrics.jsonl") as f:
        assert [json.loads(line)["step"] for line in f] == [10, 20, 30, 40]
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    scalars = acc.Scalars("loss/total")
    assert [(e.step, e.value) for e in scalars] == [(10, 10.0), (20, 20.0), (30, 30.0),
                                                    (40, 40.0)]
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2


def test_every_scalar_of_an_update_reaches_tensorboard_at_its_step(tmp_path):
    # All of an update's scalars travel in one event; TensorBoard must still see each tag.
    logger = MetricsLogger(str(tmp_path), 100, console_every_s=1e9)
    for step in (8, 16):
        logger.write(step, {"loss/total": step / 8, "sps": 1000.0 + step, "episode/n": 0,
                            "nonfinite/skipped": float("nan")})
    logger.close()
    logger.close()  # idempotent: the runtime closes it, then the wiring's `with` does
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == ["episode/n", "loss/total", "nonfinite/skipped",
                                             "sps"]
    assert [(e.step, e.value) for e in acc.Scalars("loss/total")] == [(8, 1.0), (16, 2.0)]
    assert [(e.step, e.value) for e in acc.Scalars("sps")] == [(8, 1008.0), (16, 1016.0)]
    assert [e.value != e.value for e in acc.Scalars("nonfinite/skipped")] == [True, True]


def test_metrics_jsonl_rows_reach_the_disk_within_the_flush_interval_and_on_close(
        tmp_path, monkeypatch):
    """metrics.jsonl is block-buffered (no write syscall per row) but a reader still sees each
    row within `_JSONL_FLUSH_S`, on `flush()`, and on close."""
    from podracer import logging as plog
    clock = [100.0]
    monkeypatch.setattr(plog, "_monotonic", lambda: clock[0])
    logger = MetricsLogger(str(tmp_path), 100, console_every_s=1e9)
    path = tmp_path / "metrics.jsonl"

    def rows():
        return [json.loads(line)["step"] for line in path.read_text().splitlines()]

    logger.write(1, {"a": 1.0})
    assert rows() == []                       # buffered
    clock[0] += plog._JSONL_FLUSH_S
    logger.write(2, {"a": 2.0})
    assert rows() == [1, 2]                   # the interval passed: flushed with this row
    logger.write(3, {"a": 3.0})
    logger.flush()
    assert rows() == [1, 2, 3]
    logger.write(4, {"a": 4.0})
    logger.close()
    assert rows() == [1, 2, 3, 4]
