"""What runs inside a worker process of `env.workers` (sebulba/env_workers.py starts it):
build the env batch, then answer reset / step / attach / render / progress (a curriculum's
training progress) requests on the pipe until told to close or the pipe ends (the trainer
died). Imports numpy (and podracer.curriculum, which needs no more) only: a worker starts fast.

Observations of a step are written into the shared-memory blocks the parent attached (one per
observation leaf, in `flatten`'s order; this worker's rows); everything else is pickled on the
pipe. Every error is sent back as ("error", traceback) for the parent to raise by name.
"""
from __future__ import annotations

import importlib.util
import pickle
import signal
import sys
import traceback
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from podracer.curriculum import TrainingProgress


def serve(conn: Any, payload: tuple[bytes, dict[str, str]], num_envs: int, seed: int) -> None:
    """A worker's loop (module docstring). `payload`: the pickled maker and the files of user
    modules to load by path first (sebulba/env_workers.py `_payload`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the trainer handles Ctrl-C and closes us
    try:
        env = _load_maker(payload)(num_envs, seed)
        conn.send(("ok", (env.observation_space, env.action_space,
                          getattr(env, "info_fields", None),
                          bool(getattr(env, "reads_progress", False)))))
    except BaseException:  # noqa: BLE001 - reported to the parent by name
        _reply(conn, ("error", traceback.format_exc()))
        return
    views: list[np.ndarray] | None = None
    blocks: list[shared_memory.SharedMemory] = []
    try:
        while True:
            try:
                command, arg = conn.recv()
            except (EOFError, OSError):
                return  # the parent is gone
            if command == "close":
                return
            try:
                if command == "step":
                    ts = env.step(arg)
                    if views is not None:
                        write_obs(views, ts.obs)
                    reply = (None if views is not None else ts.obs,
                             np.asarray(ts.reward, np.float32), np.asarray(ts.terminated, bool),
                             np.asarray(ts.truncated, bool), np.asarray(ts.episode_over, bool),
                             ts.info)
                elif command == "reset":
                    reply = env.reset()
                elif command == "attach":
                    specs, lo, hi = arg
                    blocks += [shared_memory.SharedMemory(name=name) for name, _, _ in specs]
                    views = [np.ndarray(shape, np.dtype(dtype), buffer=b.buf)[lo:hi]
                             for b, (_, shape, dtype) in zip(blocks, specs)]
                    reply = None
                elif command == "render":
                    reply = env.render(arg)
                elif command == "progress":
                    env.set_progress(TrainingProgress(*arg))
                    reply = None
                else:
                    raise ValueError(f"unknown command {command!r}")
            except BaseException:  # noqa: BLE001
                if not _reply(conn, ("error", traceback.format_exc())):
                    return
                continue
            if not _reply(conn, ("ok", reply)):
                return
    finally:
        views = None
        for b in blocks:
            b.close()
        try:
            env.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def _load_maker(payload: tuple[bytes, dict[str, str]]) -> Any:
    data, files = payload
    for mod_name, path in files.items():
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        spec.loader.exec_module(module)
    return pickle.loads(data)


def _reply(conn: Any, message: Any) -> bool:
    try:
        conn.send(message)
        return True
    except (BrokenPipeError, ConnectionResetError, OSError):
        return False


def write_obs(views: list[np.ndarray], obs: Any) -> None:
    """Writes a step's observation into this worker's rows of the shared blocks."""
    leaves, _ = flatten(obs)
    if len(leaves) != len(views):
        raise ValueError(f"the observation has {len(leaves)} arrays; the first reset gave "
                         f"{len(views)}.")
    for i, (view, leaf) in enumerate(zip(views, leaves)):
        if leaf.shape != view.shape or leaf.dtype != view.dtype:
            raise ValueError(f"observation leaf {i} has shape {leaf.shape} and dtype "
                             f"{leaf.dtype}; the first reset gave {view.shape} {view.dtype}.")
        view[...] = leaf


def flatten(obs: Any) -> tuple[list[np.ndarray], Any]:
    """The array leaves of an observation (dicts by sorted key, tuples/lists in order) and a
    template for `rebuild`: the order of the shared blocks on both sides of the pipe."""
    if isinstance(obs, (dict, tuple, list)):
        items = [(k, obs[k]) for k in sorted(obs)] if isinstance(obs, dict) else \
            [(None, v) for v in obs]
        leaves, trees = [], []
        for key, value in items:
            sub, tree = flatten(value)
            leaves += sub
            trees.append((key, tree, len(sub)))
        return leaves, ("dict" if isinstance(obs, dict) else type(obs), trees)
    return [np.asarray(obs)], None


def rebuild(tree: Any, leaves: list[np.ndarray]) -> Any:
    """The observation `flatten` took apart, from its template and leaves."""
    if tree is None:
        return leaves[0]
    kind, parts = tree
    out, i = [], 0
    for key, sub, n in parts:
        out.append((key, rebuild(sub, leaves[i:i + n])))
        i += n
    return dict(out) if kind == "dict" else kind(v for _, v in out)
