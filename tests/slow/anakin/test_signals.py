"""Ctrl-C and SIGTERM on an Anakin run mean what they mean on a Sebulba run (one handler,
podracer/signals.py): the first signal finishes the call in flight and saves it; a second one
abandons it (no blocking device_get holds the handler back) and the process ends at once;
Ctrl-C exits 130 with one line and a summary.json, SIGTERM (pre-emption) exits 0; a main
thread stuck in C code is ended by the watcher. Runs tests/programs/anakin_signals.py, whose update
3 takes seconds, with the signals arriving while it runs."""
import json
import signal
import subprocess
import sys

import pytest

from podracer import checkpoint
from tests.helpers import ROOT


def _run(run_dir, *args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "tests.programs.anakin_signals", str(run_dir),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("sig,count", [(signal.SIGINT, 1), (signal.SIGINT, 2),
                                       (signal.SIGTERM, 2)])
def test_signals_during_a_call_stop_the_run_as_sebulba_does(tmp_path, sig, count):
    """One signal: update 3 finishes and is the final checkpoint. Two: update 3 is abandoned
    (its state was donated to it: no checkpoint) and the summary says update 2."""
    run_dir = tmp_path / "run"
    rc, out = _run(run_dir, str(count), "3", sig.name)
    assert rc == (130 if sig == signal.SIGINT else 0), out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped_by"] == sig.name and summary["runtime"] == "anakin", summary
    steps = checkpoint.list_steps(str(run_dir / "checkpoints"))
    if count == 1:
        assert steps == [3] and summary["updates"] == 3, out
        state, meta = checkpoint.load_raw(str(run_dir / "checkpoints" / "3"))
        assert int(meta["updates"]) == int(state["update"]) == 3
        assert summary["checkpoint"].endswith("checkpoints/3")
    else:
        assert "abandoning the update in flight" in out, out
        assert steps == [] and summary["updates"] == 2 and summary["checkpoint"] is None, out
    if sig == signal.SIGINT:
        stopped = [line for line in out.splitlines() if line.startswith("stopped by SIGINT")]
        assert len(stopped) == 1, out
        assert ("resume with --config.resume=" in stopped[0]) == (count == 1), out


def test_a_signal_during_a_paced_fused_call_stops_after_that_call(tmp_path):
    """With the default paced calls (several updates per call): the run stops after the call
    in flight, and the final checkpoint, the summary and the metrics rows agree on the update
    it stopped at (every update of the call counted and logged)."""
    run_dir = tmp_path / "run"
    rc, out = _run(run_dir, "1", "3", "SIGINT", "paced")
    assert rc == 130, out
    assert "up to 16 updates per compiled call" in out and "Traceback" not in out, out
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = checkpoint.list_steps(str(run_dir / "checkpoints"))
    assert len(steps) == 1 and steps[0] == summary["updates"] >= 3, out
    state, meta = checkpoint.load_raw(str(run_dir / "checkpoints" / str(steps[0])))
    assert int(meta["updates"]) == int(state["update"]) == steps[0]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["updates"] for r in rows] == list(range(1, steps[0] + 1))


def test_second_sigint_ends_a_run_whose_main_thread_is_stuck_in_c(tmp_path):
    """Update 3 runs ~30 s of LAPACK in a host callback, inline in the main thread: the
    watcher ends the process a few seconds after the second signal, status 128 + SIGINT."""
    run_dir = tmp_path / "run"
    rc, out = _run(run_dir, "2", "3", "SIGINT", "stuck")
    assert rc == 130, out
    assert "main thread has not responded" in out and "Traceback" not in out, out
    assert checkpoint.list_steps(str(run_dir / "checkpoints")) == [], out
