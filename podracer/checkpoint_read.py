"""Finding checkpoints on disk and reading their files: which checkpoint a path means
(`resolve`, `candidates`, `list_steps`), its metadata and arrays (`load_metadata`, `load_raw`),
and telling damaged checkpoints from intact ones (`damage`, `check_metadata`, `move_aside`).

A checkpoint whose files cannot be read (a truncated `meta/metadata`, a damaged tensorstore data
file, e.g. after a full disk or a copy cut short) raises `DamagedCheckpointError` naming it.
"""
from __future__ import annotations

import os

from podracer.checkpoint_format import (DAMAGED_PREFIX, ITEMS, DamagedCheckpointError,
                                        import_orbax, single_process)

_REQUIRED_META = ("tree", "env_steps", "updates")


def resolve(path: str) -> str:
    """The checkpoint a user means: a checkpoint dir, a `checkpoints` dir or a run dir (newest).

    Raises FileNotFoundError naming the path and what was looked for.
    """
    path = os.path.abspath(os.path.expanduser(path))
    if is_checkpoint_dir(path):
        return path
    for ckpt_dir in (os.path.join(path, "checkpoints"), path):
        steps = list_steps(ckpt_dir)
        if steps:
            return os.path.join(ckpt_dir, str(steps[-1]))
    raise FileNotFoundError(
        f"no checkpoint at {path!r}: expected a run dir with checkpoints/<update>/, a "
        f"checkpoints dir, or a checkpoint dir holding {'/ and '.join(ITEMS)}/.")


def list_steps(ckpt_dir: str) -> list[int]:
    """Finished checkpoints (orbax writes to a temporary name, then renames), oldest first."""
    if not os.path.isdir(ckpt_dir):
        return []
    return sorted(int(n) for n in os.listdir(ckpt_dir) if n.isdigit()
                  and all(os.path.isdir(os.path.join(ckpt_dir, n, i)) for i in ITEMS))


def run_dir_of(checkpoint: str) -> str | None:
    """The run dir a checkpoint belongs to (`<run_dir>/checkpoints/<update>`), if laid out so."""
    parent = os.path.dirname(os.path.abspath(checkpoint))
    return os.path.dirname(parent) if os.path.basename(parent) == "checkpoints" else None


def _cause(e: BaseException) -> str:
    """An exception as one short line (tensorstore errors run to several hundred characters)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {text[:300]}{' ...' if len(text) > 300 else ''}"


def load_metadata(path: str) -> dict:
    """The JSON metadata of the checkpoint `path` resolves to (cheap: no arrays are read).

    Raises DamagedCheckpointError when it is unreadable or lacks the fields every save writes.
    """
    ocp = import_orbax()
    ckpt = resolve(path)
    reader = ocp.Checkpointer(ocp.JsonCheckpointHandler(),
                              multiprocessing_options=single_process(ocp))
    try:  # a truncated file raises json's JSONDecodeError, which names no path
        meta = reader.restore(os.path.join(ckpt, "meta"))
    except (ValueError, OSError) as e:
        raise DamagedCheckpointError(ckpt, f"meta/metadata: {_cause(e)}") from e
    finally:
        reader.close()
    missing = [k for k in _REQUIRED_META if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise DamagedCheckpointError(ckpt, f"meta/metadata lacks {missing}")
    return meta


def load_raw(path: str) -> tuple[dict, dict]:
    """(learner state as a nested dict of numpy arrays, metadata); no structure check.

    Raises DamagedCheckpointError when a file of the checkpoint cannot be read.
    """
    ocp = import_orbax()
    ckpt = resolve(path)
    meta = load_metadata(ckpt)
    reader = ocp.StandardCheckpointer(multiprocessing_options=single_process(ocp))
    try:  # tensorstore reports damaged data as ValueError("DATA_LOSS: ..."/"OUT_OF_RANGE: ...")
        state = reader.restore(os.path.join(ckpt, "state"))
    except (ValueError, OSError) as e:
        raise DamagedCheckpointError(ckpt, f"state/: {_cause(e)}") from e
    finally:  # an unclosed reader's event loop is collected later: "Event loop is closed"
        reader.close()
    return state, meta


def is_checkpoint_dir(path: str) -> bool:
    """Whether `path` itself is one checkpoint (holds state/ and meta/), not a dir of them."""
    return all(os.path.isdir(os.path.join(path, item)) for item in ITEMS)


def candidates(path: str) -> list[str]:
    """The checkpoints `path` may mean, newest first: itself if it is a checkpoint dir, else the
    finished checkpoints of its `checkpoints/` subdir (a run dir) or of itself."""
    path = os.path.abspath(os.path.expanduser(path))
    if is_checkpoint_dir(path):
        return [path]
    for ckpt_dir in (os.path.join(path, "checkpoints"), path):
        steps = list_steps(ckpt_dir)
        if steps:
            return [os.path.join(ckpt_dir, str(s)) for s in reversed(steps)]
    return []


def damage(ckpt: str) -> str | None:
    """Why the checkpoint `ckpt` cannot be read (reads it whole), or None when it is intact."""
    try:
        load_raw(ckpt)
    except DamagedCheckpointError as e:
        return e.cause
    return None


def intact_siblings(ckpt: str) -> list[str]:
    """The intact checkpoints beside `ckpt` (in its parent dir), newest first."""
    return [c for c in candidates(os.path.dirname(ckpt)) if c != ckpt and damage(c) is None]


def check_metadata(ckpt: str) -> None:
    """Cheap early check of one checkpoint dir (its JSON metadata only): raises
    DamagedCheckpointError naming it and listing the intact checkpoints beside it."""
    try:
        load_metadata(ckpt)
    except DamagedCheckpointError as e:
        raise DamagedCheckpointError(e.checkpoint, e.cause, intact_siblings(ckpt)) from e


def move_aside(ckpt: str) -> str:
    """Renames a damaged `<dir>/<update>` to `<dir>/damaged-<update>`, out of the way of
    `list_steps` and of orbax (a resumed run saves that update again); returns the new path."""
    parent, name = os.path.split(os.path.abspath(ckpt))
    target = os.path.join(parent, DAMAGED_PREFIX + name)
    n = 1
    while os.path.exists(target):  # the same update damaged twice: keep both
        target, n = os.path.join(parent, f"{DAMAGED_PREFIX}{name}.{n}"), n + 1
    os.rename(ckpt, target)
    return target
