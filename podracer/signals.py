"""Ctrl-C and SIGTERM for a training loop, shared by both runtimes (sebulba/runner.py and
anakin/loop.py), so that a signal means the same thing whichever one runs.

The first SIGINT/SIGTERM asks the loop to stop after the update in flight, so that the final
checkpoint holds an intact state. The second one abandons that update: `StopOnSignal.urgent`
is set, and a loop that waits for its update with `wait_ready` raises `Abandoned` instead of
waiting for the end. If the main thread cannot run the Python handler (it is inside a long C++
call: a compilation, a blocking device wait), a watcher thread ends the process
`StopOnSignal.grace_s` seconds after the second signal with status 128 + the signal number.
"""
from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
from typing import Any, Callable

import jax


class Abandoned(Exception):
    """The second signal abandoned the update in flight."""


class StopOnSignal(contextlib.AbstractContextManager):
    """First SIGINT/SIGTERM (main thread only) records the signal in `received` and calls
    `on_stop` (the Sebulba runtime stops every thread; the loop itself checks `received`), so
    the update in flight finishes and the state is intact for the final checkpoint. The second
    sets `urgent`: the loop abandons the update in flight and stops waiting for threads.

    The handler only sets flags: it never raises (an exception raised between two statements
    of the learner loop is what once saved a state under another update's label) and never
    writes. A handler runs between two bytecodes of the main thread, possibly inside its own
    `print` to a full pipe; a second write to the same stream from there raises "reentrant
    call" out of whatever the main thread was doing. The messages are written by the watcher
    thread instead (`_say`), which sees every signal as the C handler records it.

    Python runs handlers only when the main thread is back in the interpreter, not while it
    sits in one long C++ call (a compilation, a synchronous computation). A watcher thread
    sees the signals at C level (`signal.set_wakeup_fd`): if the handler of a second signal
    has not run `grace_s` after it arrived, it ends the process (status 128 + signal number)
    without a final checkpoint, since no state is known to be intact.
    """

    grace_s = 3.0

    def __init__(self, on_stop: Callable[[], None] | None = None) -> None:
        self.on_stop = on_stop
        self.received: str | None = None
        self.urgent = threading.Event()
        self._old: dict = {}
        self._wakeup: tuple[int, int] | None = None
        self._old_fd = -1

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            _ACTIVE.append(self)
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
            r, w = os.pipe()
            os.set_blocking(w, False)  # the C handler must never block on it
            self._old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
            self._wakeup = (r, w)
            threading.Thread(target=self._watch, args=(r,), name="signal-watch",
                             daemon=True).start()
        return self

    def _watch(self, fd: int) -> None:
        # This thread only watches: the signals go to the main thread, whose blocking calls
        # they interrupt (the handler runs there), not to this one.
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        count, last = 0, signal.SIGINT
        try:
            while data := os.read(fd, 64):  # b"" once __exit__ closes the write end
                sigs = [b for b in data if b in (signal.SIGINT, signal.SIGTERM)]
                if not sigs:
                    continue
                for sig in sigs:
                    count += 1
                    self._say(count, signal.Signals(sig).name)
                last = sigs[-1]
                if count >= 2 and not self.urgent.wait(self.grace_s):
                    name = signal.Signals(last).name
                    print(f"{name} again, and the main thread has not responded for "
                          f"{self.grace_s:g}s (inside a compilation or a device call): "
                          f"exiting now, without a final checkpoint.", file=sys.stderr,
                          flush=True)
                    sys.stdout.flush()
                    os._exit(128 + last)
        finally:
            os.close(fd)

    @staticmethod
    def _say(count: int, name: str) -> None:
        """The message for the `count`-th signal (watcher thread; the handler never writes)."""
        if count == 1:
            print(f"{name}: stopping after the current update (signal again to stop at once).",
                  flush=True)
        elif count == 2:
            print(f"{name} again: abandoning the update in flight; the final checkpoint holds "
                  f"the newest complete update, if its state is intact.", flush=True)

    def _handle(self, signum, frame):
        """Flags only (see the class docstring): no output, no exception."""
        if self.received is not None:
            self.urgent.set()
            return
        self.received = signal.Signals(signum).name
        if self.on_stop is not None:
            self.on_stop()

    def __exit__(self, *exc):
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        for sig, old in self._old.items():
            signal.signal(sig, old)
        if self._wakeup is not None:
            signal.set_wakeup_fd(self._old_fd)
            os.close(self._wakeup[1])  # ends the watcher
        return False


_ACTIVE: list[StopOnSignal] = []  # the handlers in place now (main thread, innermost last)


def urgent() -> bool:
    """Whether a second signal has come while a loop handles signals: what the loop waits for
    at its end (the evaluation in flight) should stop being waited for."""
    return any(s.urgent.is_set() for s in list(_ACTIVE))


def wait_ready(tree: Any, urgent: threading.Event) -> Any:
    """Returns `tree` (an update's outputs, still on the devices) once every array in it is
    computed, keeping the main thread free to handle signals while a long update runs (a
    blocked device_get held a second Ctrl-C for the whole update, ~50 s on a loaded CPU):
    raises `Abandoned` within `_URGENT_POLL_S` of `urgent` being set.

    One long-lived helper thread (`_Waiter`) blocks on the arrays (jax.block_until_ready
    releases the GIL) and wakes the main thread the moment they are ready. Polling `is_ready`
    with doubling sleeps woke up to twice the update's time late (~2-5 ms of every Anakin call
    on CartPole, where a whole update takes ~5 ms), and a new thread per call cost its start-up
    (a quarter of the wait under py-spy on a loaded 2-core VM). An error of the computation is
    not raised here: the caller's device_get raises it."""
    leaves = [x for x in jax.tree.leaves(tree) if isinstance(x, jax.Array)]
    if all(x.is_ready() for x in leaves):
        return tree
    done = _WAITER.submit(leaves)
    while not done.wait(_URGENT_POLL_S):
        if urgent.is_set():
            raise Abandoned()
    return tree


class _Waiter:
    """A daemon thread that blocks on submitted arrays, one job after another, and sets each
    job's Event when its arrays are computed (or failed). Started on first use; an abandoned
    job finishes in the background and only delays the jobs after it."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, leaves: list) -> threading.Event:
        done = threading.Event()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="wait-ready",
                                                daemon=True)
                self._thread.start()
        self._jobs.put((leaves, done))
        return done

    def _run(self) -> None:
        while True:
            leaves, done = self._jobs.get()
            try:
                jax.block_until_ready(leaves)
            except Exception:  # noqa: BLE001 - re-raised by the caller's device_get
                pass
            finally:
                done.set()
                del leaves  # hold no buffer of a finished job


_WAITER = _Waiter()

_URGENT_POLL_S = 0.02  # how soon a second signal abandons the call in flight
