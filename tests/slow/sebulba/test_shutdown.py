"""Faults end the run promptly: an actor error exits non-zero; Ctrl-C and SIGTERM stop it
after the current update and leave a checkpoint (SIGTERM, i.e. pre-emption, then exits 0;
Ctrl-C exits 130 with one line and a summary.json, no traceback). A second signal abandons
the update in flight; every checkpoint holds the state of the update it is named after."""
import json
import signal
import subprocess
import sys
import time

import pytest

from podracer import checkpoint
from tests.helpers import ROOT, read_metrics, restore_run, wait_until_training


def _start(mode, tmp_path):
    return subprocess.Popen([sys.executable, "-m", "tests.programs.sebulba_faults", mode,
                             str(tmp_path / "run")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_actor_error_stops_run_with_nonzero_exit(tmp_path):
    start = time.time()
    proc = _start("actor_error", tmp_path)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    assert "injected env failure" in out
    assert "actor-1" in out  # the failing thread is named
    assert time.time() - start < 120


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_run_and_leaves_a_loadable_checkpoint(tmp_path, sig):
    proc = _start("long", tmp_path)
    wait_until_training(proc)
    sent = time.time()
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=20)  # drains stdout, so printing never blocks it
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("run did not stop within 20 s of " + sig.name)
    assert time.time() - sent < 20
    if sig == signal.SIGTERM:
        assert proc.returncode == 0, out  # pre-emption: checkpoint written, clean exit
    else:
        assert proc.returncode == 130, out  # Ctrl-C: after the checkpoint, no traceback
        assert "Traceback" not in out and "stopped by SIGINT at update" in out, out
    assert "checkpoint: " in out, out
    run_dir = tmp_path / "run"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped_by"] == sig.name
    saved = restore_run(str(run_dir))
    steps = [row["step"] for row in read_metrics(run_dir)]
    assert saved.updates == len(steps) > 0 and saved.env_steps == steps[-1]


def _label_and_state_counter(ckpt: str) -> tuple[int, int]:
    state, meta = checkpoint.load_raw(ckpt)
    return int(meta["updates"]), int(state["update"])


@pytest.mark.parametrize("count", [1, 2])
def test_sigint_during_an_update_saves_a_consistent_checkpoint_and_summary(tmp_path, count):
    """Signals arrive while update 3 runs (tests/programs/sebulba_signals.py). One: update 3
    finishes and is saved as update 3. Two: update 3 is abandoned (its state was donated to
    it, so nothing intact to save); it used to be saved under the label of update 2."""
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "tests.programs.sebulba_signals", str(run_dir),
                           str(count), "3"], cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    stopped = [line for line in out.splitlines() if line.startswith("stopped by SIGINT")]
    assert len(stopped) == 1, out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped_by"] == "SIGINT"
    steps = checkpoint.list_steps(str(run_dir / "checkpoints"))
    for step in steps:  # the label, the metadata and the state inside agree
        assert _label_and_state_counter(str(run_dir / "checkpoints" / str(step))) == (step, step)
    if count == 1:
        assert steps == [3] and summary["updates"] == 3, out
        assert summary["checkpoint"].endswith("checkpoints/3")
        assert "resume with --config.resume=" in stopped[0]
    else:
        assert steps == [] and summary["updates"] == 2, out
        assert summary["checkpoint"] is None and "no checkpoint" in stopped[0]


def test_second_sigint_ends_a_run_whose_main_thread_is_stuck_in_c(tmp_path):
    """Python cannot run a signal handler while the main thread is inside a long C/C++ call
    (here ~30 s of LAPACK inside update 3; in real runs a compilation). The watcher thread
    ends the process a few seconds after the second signal instead of after the call."""
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "tests.programs.sebulba_signals", str(run_dir),
                           "2", "3", "SIGINT", "stuck"], cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 130, out
    assert "main thread has not responded" in out and "Traceback" not in out, out
    # Ended inside update 3: its state is not intact, and nothing was saved.
    assert checkpoint.list_steps(str(run_dir / "checkpoints")) == [], out
    assert not any(line.startswith("checkpoint: ") for line in out.splitlines()), out
