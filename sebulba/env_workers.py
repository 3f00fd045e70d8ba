"""Python env batches stepped in worker processes (`env.workers=N`), so that a simulator written
in Python uses the host's cores instead of the actor's one thread.

`ProcessEnvBatch(make_batch, num_envs, seed, workers, name)` splits `num_envs` envs into
`workers` contiguous slices; worker w runs `make_batch(n_w, seed + lo_w)` (an in-process env
batch with the runtime's API and episode semantics: sebulba/envs.py, sebulba/adapters.py) in a
process of its own, so env i still gets seed + i and keeps the trajectories it has in the
actor's process. Observations come back through shared memory (one block per observation
leaf, each worker writing its rows); actions, rewards, flags and `info` go through a pipe.
The worker's side of the pipe is sebulba/env_worker.py. `send`/`recv` split the step (the
workers step while the actor runs the policy of its other half-pool, sebulba/actor_pools.py).
`split`, `concat` and `merge_info` (slices of a batch, observations and infos joined along the
env axis) also serve sebulba/scenario_pools.py.

Why not gymnasium's AsyncVectorEnv(shared_memory=True): it runs one process per env, so 64
envs on a 16-core host are 64 processes contending for 16 cores; its workers also cannot host a
registered env batch (one maker for a batch, the runtime's API) nor report worker deaths by
name. The design follows the well-kept ones (SB3's SubprocVecEnv, Sample Factory): spawned
daemon processes ("spawn": forking a process that runs JAX threads is unsafe), one pipe each.

Faults: a worker that raises (building, resetting or stepping) or dies (killed, crashed)
raises `EnvWorkerError` naming the env, the worker, its envs and pid, with the worker's
traceback; sebulba/env_guard.py turns it into the actor's EnvFault. Shutdown: workers ignore
SIGINT (the trainer's Ctrl-C handling closes them after the final checkpoint), `close` asks
them to exit and terminates stragglers, and a worker whose parent dies reads end-of-file on
its pipe and exits, so no process outlives the run.
"""
from __future__ import annotations

import importlib.util
import multiprocessing
import pickle
import sys
import time
import weakref
from multiprocessing import shared_memory
from typing import Any, Callable

import jax
import numpy as np

from sebulba.env_worker import flatten, rebuild, serve
from sebulba.timestep import TimeStep

_JOIN_S = 5.0  # seconds `close` waits for a worker before terminating it


class EnvWorkerError(RuntimeError):
    """A worker process raised or died; the message names the env, the worker and its envs."""


def split(num_envs: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous [lo, hi) env slices of `num_envs` over `workers` (the first ones one larger
    when it does not divide)."""
    base, extra = divmod(num_envs, workers)
    out, lo = [], 0
    for w in range(workers):
        hi = lo + base + (w < extra)
        out.append((lo, hi))
        lo = hi
    return out


class ProcessEnvBatch:
    """`num_envs` envs stepped in `min(workers, num_envs)` worker processes (module doc).

    `make_batch(num_envs, seed)` must be picklable by reference (a module-level function, or a
    functools.partial of one): each worker unpickles and calls it.
    """

    def __init__(self, make_batch: Callable[[int, int], Any], num_envs: int, seed: int,
                 workers: int, name: str = "env") -> None:
        if num_envs < 1 or workers < 1:
            raise ValueError(f"{name}: num_envs={num_envs} and workers={workers} must be >= 1.")
        self.name = name
        self.num_envs = num_envs
        self._slices = split(num_envs, min(workers, num_envs))
        payload = _payload(make_batch, name)
        ctx = multiprocessing.get_context("spawn")
        self._procs: list = []
        self._conns: list = []
        self._shm: list[shared_memory.SharedMemory] = []
        self._views: list[np.ndarray] | None = None
        self._obs_tree: Any = None
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns, self._shm)
        for w, (lo, hi) in enumerate(self._slices):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=serve, args=(child, payload, hi - lo, seed + lo),
                               name=f"{name}-worker{w}", daemon=True)
            proc.start()
            child.close()  # the worker holds the only other end: EOF when it dies
            self._procs.append(proc)
            self._conns.append(parent)
        try:
            described = self._gather("building its envs")
        except BaseException:
            self.close()
            raise
        self.observation_space, self.action_space, fields, reads_progress = described[0]
        if fields is not None:
            self.info_fields = tuple(fields)
        self.reads_progress = bool(reads_progress)  # a curriculum in the workers' envs

    @property
    def workers(self) -> int:
        return len(self._slices)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def reset(self) -> Any:
        for w, conn in enumerate(self._conns):
            try:
                conn.send(("reset", None))
            except (OSError, EOFError):
                raise self._died(w, "resetting") from None
        obs = concat(self._gather("resetting"))
        if self._views is None:
            self._attach(obs)
        return obs

    def step(self, action: Any) -> TimeStep:
        self.send(action)
        return self.recv()

    def send(self, action: Any) -> None:
        """Hands each worker its envs' actions and returns at once."""
        for w, (lo, hi) in enumerate(self._slices):
            try:
                self._conns[w].send(("step", jax.tree.map(lambda a: np.asarray(a)[lo:hi], action)))
            except (OSError, EOFError):
                raise self._died(w, "stepping") from None

    def recv(self) -> TimeStep:
        """Waits for every worker's step; the observation is read from shared memory."""
        parts = self._gather("stepping")
        if self._views is None:  # stepped before any reset: observations came by pipe
            obs = concat([p[0] for p in parts])
        else:
            obs = rebuild(self._obs_tree, [np.array(v) for v in self._views])
        reward, terminated, truncated, over = (np.concatenate([p[i] for p in parts])
                                               for i in range(1, 5))
        info = merge_info([p[5] for p in parts], [hi - lo for lo, hi in self._slices])
        return TimeStep(obs, reward, terminated, truncated, over, info)

    def set_progress(self, progress: Any) -> None:
        """Hands the training progress (podracer/curriculum.py) to every worker's envs."""
        for w, conn in enumerate(self._conns):
            try:
                conn.send(("progress", tuple(progress)))
            except (OSError, EOFError):
                raise self._died(w, "setting the training progress") from None
        self._gather("setting the training progress")

    def render(self, env_id: int = 0) -> Any:
        for w, (lo, hi) in enumerate(self._slices):
            if lo <= env_id < hi:
                self._conns[w].send(("render", env_id - lo))
                return self._receive(w, "rendering")
        raise IndexError(f"{self.name}: env_id={env_id} not in [0, {self.num_envs}).")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._finalizer()

    def _attach(self, obs: Any) -> None:
        """Shared blocks for the observation leaves, shaped like the batch `reset` returned;
        each worker then writes its rows in place of sending them."""
        leaves, self._obs_tree = flatten(obs)
        self._views = []
        specs = []
        for leaf in leaves:
            shm = shared_memory.SharedMemory(create=True, size=max(leaf.nbytes, 1))
            self._shm.append(shm)
            self._views.append(np.ndarray(leaf.shape, leaf.dtype, buffer=shm.buf))
            specs.append((shm.name, leaf.shape, leaf.dtype.str))
        for w, (lo, hi) in enumerate(self._slices):
            self._conns[w].send(("attach", (specs, lo, hi)))
        self._gather("attaching shared memory")

    def _gather(self, doing: str) -> list:
        """Every worker's reply, in order; all are read before the first error is raised, so
        that none is left in a pipe to answer the next request."""
        parts, errors = [], []
        for w in range(self.workers):
            try:
                parts.append(self._receive(w, doing))
            except EnvWorkerError as e:
                errors.append(e)
        if errors:
            raise errors[0]
        return parts

    def _receive(self, w: int, doing: str) -> Any:
        conn, proc = self._conns[w], self._procs[w]
        try:
            while not conn.poll(1.0):
                if not proc.is_alive():
                    raise EOFError
            status, value = conn.recv()
        except (EOFError, ConnectionResetError, BrokenPipeError, OSError):
            raise self._died(w, doing) from None
        if status == "error":
            raise EnvWorkerError(f"{self._where(w)} raised while {doing}:\n{value}")
        return value

    def _died(self, w: int, doing: str) -> EnvWorkerError:
        proc = self._procs[w]
        proc.join(timeout=1.0)
        code = proc.exitcode
        how = ("is still running but closed its pipe" if code is None else
               f"was killed by signal {-code}" if code < 0 else f"exited with code {code}")
        return EnvWorkerError(f"{self._where(w)} died while {doing}: the process {how}.")

    def _where(self, w: int) -> str:
        lo, hi = self._slices[w]
        return (f"env {self.name!r}: worker {w} of {self.workers} (envs {lo}..{hi - 1}, "
                f"pid {self._procs[w].pid})")


def _shutdown(procs: list, conns: list, blocks: list) -> None:
    """Asks every worker to exit, terminates the ones that do not, frees the shared memory."""
    for conn in conns:
        try:
            conn.send(("close", None))
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + _JOIN_S
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=1.0)
    for conn in conns:
        conn.close()
    for shm in blocks:
        shm.close()
        try:
            shm.unlink()
        except FileNotFoundError:
            pass
    blocks.clear()


def _payload(make_batch: Any, name: str) -> tuple[bytes, dict[str, str]]:
    """The maker pickled, with the files of user modules a worker cannot import by name (an
    `--import path/to/file.py` outside sys.path): the worker loads those first."""
    try:
        data = pickle.dumps(make_batch)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise ValueError(
            f"env {name!r}: env.workers needs an env maker that worker processes can import by "
            f"name (a module-level function, not a lambda or a closure); {make_batch!r} "
            f"cannot be sent: {e}") from None
    files = {}
    for mod_name in _referenced_modules(make_batch):
        path = getattr(sys.modules.get(mod_name), "__file__", None)
        if path and mod_name != "__main__" and _unfindable(mod_name):
            files[mod_name] = path
    return data, files


def _unfindable(mod_name: str) -> bool:
    try:
        return importlib.util.find_spec(mod_name) is None
    except (ImportError, ValueError):  # a module loaded from a file has no findable spec
        return True


def _referenced_modules(obj: Any) -> set[str]:
    names = {getattr(obj, "__module__", None)}
    for arg in (*getattr(obj, "args", ()), *getattr(obj, "keywords", {}).values()):
        names.add(getattr(arg, "__module__", None))
    return {n for n in names if n}


def concat(parts: list[Any]) -> Any:
    """Per-worker observations -> the batch's, along the env axis."""
    return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)


def merge_info(infos: list[Any], sizes: list[int]) -> Any:
    """The workers' per-step infos as one: [n_w] arrays are concatenated along the env axis
    (a key some workers lack is filled with zeros, its gymnasium "_<key>" mask with False);
    nested dicts are merged alike; anything else is worker 0's."""
    if all(i is None for i in infos):
        return None
    infos = [i if i is not None else {} for i in infos]
    if not all(isinstance(i, dict) for i in infos):
        return infos[0]
    keys: list = []
    for info in infos:
        keys += [k for k in info if k not in keys]
    out = {}
    for key in keys:
        values = [info.get(key) for info in infos]
        present = next(v for v in values if v is not None)
        if isinstance(present, dict):
            out[key] = merge_info(values, sizes)
            continue
        per_env = all(v is None or (np.ndim(v) >= 1 and np.shape(v)[0] == n)
                      for v, n in zip(values, sizes))
        if not per_env:
            out[key] = present
            continue
        present = np.asarray(present)
        out[key] = np.concatenate([
            np.asarray(v) if v is not None else np.zeros((n,) + present.shape[1:],
                                                         present.dtype)
            for v, n in zip(values, sizes)])
    return out
