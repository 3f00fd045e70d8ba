"""Checks on what an actor's environments hand back, so a broken env fails loudly and early.

`CheckedEnv` wraps an env batch (EnvPool or a user adapter) and turns every way it can go
wrong into an `EnvFault` that names the actor, the env index within its pool and the step:
- `reset` or `step` raises;
- an observation leaf changes shape or dtype from what `reset` returned (wrong shape);
- a floating-point observation or a reward is NaN or infinite.
The checks apply to `step` and to the split step `send`/`recv` alike (the overlapped actor).
Without these checks a NaN observation reaches the loss many steps later as an anonymous NaN
update, and a wrong shape fails inside a jitted function with an unrelated-looking error.

Cost (measured, docs/robustness.md): the finiteness check runs on the host numpy arrays only for
float leaves (uint8 Atari frames cannot be NaN) and takes about a microsecond for a CartPole batch
and tens of microseconds for large MuJoCo batches, against hundreds of microseconds for the env
step itself, so it runs on every step.
"""
from __future__ import annotations

import queue
import threading
from typing import Any

import jax
import numpy as np

from sebulba.env_workers import EnvWorkerError
from sebulba.envs import TimeStep


class EnvFault(RuntimeError):
    """An environment raised or returned bad data; the message says which env and when."""


def has_native_send_recv(env: Any) -> bool:
    """True when the env's class defines `send` and `recv` (EnvPool pools): its step then
    runs in its own threads. Checked on the class, so that a wrapper forwarding unknown
    attributes (`__getattr__`) to an EnvPool pool does not have its own `step` bypassed."""
    cls = type(env)
    return callable(getattr(cls, "send", None)) and callable(getattr(cls, "recv", None))


def _describe(e: BaseException) -> str:
    """A worker's error (sebulba/env_workers.py) already names its env and worker and carries
    the worker's traceback: kept readable (str, not repr's one escaped line)."""
    return f"{type(e).__name__}: {e}" if isinstance(e, EnvWorkerError) else repr(e)


def _spec(obs: Any) -> list[tuple[tuple[int, ...], np.dtype]]:
    return [(np.shape(x), np.asarray(x).dtype) for x in jax.tree.leaves(obs)]


def _bad_rows(x: np.ndarray) -> np.ndarray:
    """Indices along the env axis whose entries are not all finite."""
    return np.flatnonzero(~np.isfinite(x.reshape(x.shape[0], -1)).all(axis=1))


class CheckedEnv:
    """Wraps an env batch; `reset`/`step` raise EnvFault on any fault (see module doc)."""

    def __init__(self, env: Any, name: str) -> None:
        self.env, self.name = env, name
        self.num_envs = env.num_envs
        self.steps = 0  # steps of this pool since it was built
        self._spec: list | None = None
        self._native: bool | None = None  # the env has its own send/recv (decided on use)
        self._worker: _StepWorker | None = None  # steps an env that has only `step`

    def __getattr__(self, attr: str) -> Any:  # action_space, observation_space, render ...
        if attr == "env":  # not set yet (e.g. while unpickling): no infinite recursion
            raise AttributeError(attr)
        return getattr(self.env, attr)

    def set_progress(self, progress: Any) -> None:
        """Hands the training progress to an env that reads it (a curriculum); a fault in it
        is an EnvFault like any other."""
        try:
            self.env.set_progress(progress)
        except Exception as e:  # noqa: BLE001 - any env error becomes a located EnvFault
            raise EnvFault(f"{self.name}: env.set_progress() raised {_describe(e)}") from e

    def reset(self) -> Any:
        try:
            obs = self.env.reset()
        except Exception as e:  # noqa: BLE001 - any env error becomes a located EnvFault
            raise EnvFault(f"{self.name}: env.reset() raised {_describe(e)}") from e
        self._spec = _spec(obs)
        self._check_obs(obs, "reset")
        return obs

    def step(self, action: np.ndarray) -> TimeStep:
        self.steps += 1
        try:
            ts = self.env.step(action)
        except Exception as e:  # noqa: BLE001
            raise EnvFault(f"{self.name}: env.step() raised at step {self.steps} of its "
                           f"pool: {_describe(e)}") from e
        return self._check_step(ts)

    def send(self, action: Any) -> None:
        """Starts a step: the env's own `send` (EnvPool) or, for an env with only `step`, a
        helper thread running `step` (an env that releases the GIL then overlaps too)."""
        self.steps += 1
        if self._native is None:
            self._native = has_native_send_recv(self.env)
        try:
            if self._native:
                self.env.send(action)
            else:
                if self._worker is None:
                    self._worker = _StepWorker(self.env.step, f"{self.name}-step")
                self._worker.send(action)
        except Exception as e:  # noqa: BLE001
            raise EnvFault(f"{self.name}: env.send() raised at step {self.steps} of its "
                           f"pool: {_describe(e)}") from e

    def recv(self) -> TimeStep:
        """Waits for the step `send` started; the same checks as `step`."""
        try:
            if self._native:
                ts = self.env.recv()
            else:
                if self._worker is None:
                    raise RuntimeError("recv() without a send()")
                ts = self._worker.recv()
        except Exception as e:  # noqa: BLE001
            raise EnvFault(f"{self.name}: env.step() raised at step {self.steps} of its "
                           f"pool: {_describe(e)}") from e
        return self._check_step(ts)

    def _check_step(self, ts: TimeStep) -> TimeStep:
        self._check_obs(ts.obs, self.steps)
        batch = (self.num_envs,)
        for field in ("reward", "terminated", "truncated"):
            shape = np.shape(getattr(ts, field))
            if shape != batch:
                raise EnvFault(f"{self.name}: {field} has shape {shape} at step {self.steps}; "
                               f"expected {batch}, one per env of the pool.")
        if not np.isfinite(ts.reward).all():
            self._fail_nonfinite("reward", np.asarray(ts.reward), f"step {self.steps}")
        return ts

    def _check_obs(self, obs: Any, step: int | str) -> None:
        # The hot path (a plain array) skips the pytree flattening.
        leaves = [obs] if isinstance(obs, np.ndarray) else jax.tree.leaves(obs)
        where = step if isinstance(step, str) else f"step {step}"
        if self._spec is not None and len(leaves) != len(self._spec):
            raise EnvFault(f"{self.name}: observation has {len(leaves)} arrays at {where}; "
                           f"reset returned {len(self._spec)}.")
        for i, x in enumerate(leaves):
            x = np.asarray(x)
            label = "observation" if len(leaves) == 1 else f"observation leaf {i}"
            if x.ndim == 0 or x.shape[0] != self.num_envs:
                raise EnvFault(f"{self.name}: {label} has shape {x.shape} at {where}; its "
                               f"first axis must be the pool's {self.num_envs} envs.")
            if self._spec is not None and (x.shape, x.dtype) != self._spec[i]:
                shape, dtype = self._spec[i]
                raise EnvFault(f"{self.name}: {label} has shape {x.shape} and dtype {x.dtype} "
                               f"at {where}; reset returned {shape} {dtype}.")
            # Cheap: integer frames (Atari uint8) cannot be NaN, so only float leaves.
            if x.dtype.kind == "f" and not np.isfinite(x).all():
                self._fail_nonfinite(label, x, where)

    def _fail_nonfinite(self, label: str, x: np.ndarray, where: str) -> None:
        rows = _bad_rows(x)
        raise EnvFault(f"{self.name}: non-finite {label} from env(s) {rows.tolist()} of its "
                       f"pool of {self.num_envs} at {where} (values of env {rows[0]}: "
                       f"{[round(float(v), 4) for v in x[rows[0]].ravel()[:4]]}).")

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
        self.env.close()


class _StepWorker:
    """A daemon thread that runs `step(action)` for `send` and hands the result to `recv`:
    the default split step of an env that has only `step`. A daemon, so that a stuck env
    cannot keep the process from exiting (the actor threads are daemons for the same reason).
    """

    def __init__(self, step, name: str) -> None:
        self._step = step
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._in_flight = False
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            action = self._requests.get()
            if action is _STOP:
                return
            try:
                self._results.put((True, self._step(action[0])))
            except BaseException as e:  # noqa: BLE001 - re-raised in recv's thread
                self._results.put((False, e))

    def send(self, action: Any) -> None:
        if self._in_flight:
            raise RuntimeError("send() twice without recv()")
        self._in_flight = True
        self._requests.put((action,))

    def recv(self) -> Any:
        if not self._in_flight:
            raise RuntimeError("recv() without a send()")
        ok, value = self._results.get()
        self._in_flight = False
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        self._requests.put(_STOP)


_STOP = object()
