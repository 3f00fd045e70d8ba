"""How a run's process ends, on either runtime (experiments/wiring/run.py): after Ctrl-C (the
summary, one line, exit 130), after a lost peer (one message, exit 1) and after a second
signal abandoned an update (at once)."""
from __future__ import annotations

import os
import sys
from typing import Any

from podracer import distributed


def exit_on_lost_peer(error: Exception, checkpointer) -> None:
    """One message naming the lost process and the newest checkpoint, then exit 1 (either
    runtime). No normal exit with a dead peer: jax.distributed's atexit shutdown would abort."""
    newest = (f" Newest checkpoint: {checkpointer.path(checkpointer.last_saved)}."
              if checkpointer is not None and checkpointer.last_saved is not None else "")
    distributed.exit_lost_peer(f"{error}{newest}")


def exit_now_if_abandoned(result, status: int) -> None:
    """After a second signal abandoned an update, ends the process at once: files are closed
    and checkpoints written, but a normal exit would wait for the abandoned computation."""
    if result.abandoned:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def exit_interrupted(error, files, evaluator, main: bool, **extra: Any) -> None:
    """Ctrl-C (`error`: the runtime's `Interrupted`, either runtime): the same summary.json as
    SIGTERM (`files`: the run's RunFiles), one line, exit 130 (at once if an update was
    abandoned)."""
    run_dir = files.run_dir
    if main:
        files.write_summary(error.result, evaluator, **extra)
    hint = f"; resume with --config.resume={run_dir}" if error.result.checkpoint else ""
    print(f"{error}{hint}.", flush=True)
    exit_now_if_abandoned(error.result, 130)
    raise SystemExit(130) from None
