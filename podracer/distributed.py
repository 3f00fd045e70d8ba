"""Multi-host start-up: one process per host joins `jax.distributed` before any device use.

Settings come from the config (`distributed.*`) or, with `auto`, from the cluster environment
that `jax.distributed.initialize()` detects itself (SLURM, Open MPI, TPU pods). Collectives then
run over NCCL on GPUs, ICI/DCN on TPUs, and gloo on CPUs (how the tests run two processes on one
machine). If a process dies, the coordination service's heartbeat makes the others abort
within about `heartbeat_timeout_s`, so a broken run never hangs in a collective.

A collective that fails because a peer died (gloo/NCCL connection errors) is recognised by
`lost_peer`; the runner raises `PeerLost` and `exit_lost_peer` ends the process with one message.
It must not exit normally: jax's atexit hook calls `jax.distributed.shutdown()`, whose shutdown
barrier cannot complete without the dead peer, and the coordination client then aborts the
process (SIGABRT, a C++ stack dump) once the heartbeat times out.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from typing import Sequence

import jax


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    mode: str = "auto"             # "auto": join if configured or under SLURM; "off"; "on"
    coordinator_address: str = ""  # host:port of process 0; "" = detect from the cluster
    num_processes: int = 1         # total processes (one per host)
    process_id: int = 0            # this process's rank
    local_device_ids: Sequence[int] | None = None  # devices this process may use (None = all)
    heartbeat_timeout_s: int = 60  # a dead peer aborts the others after about this long
    init_timeout_s: int = 300      # how long to wait for every process to join

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "on", "off"):
            raise ValueError(f"distributed.mode={self.mode!r}; allowed: 'auto', 'on', 'off'.")
        if self.num_processes < 1:
            raise ValueError(f"distributed.num_processes={self.num_processes} must be >= 1.")
        if not 0 <= self.process_id < self.num_processes:
            raise ValueError(f"distributed.process_id={self.process_id} must be in "
                             f"[0, {self.num_processes - 1}] for num_processes="
                             f"{self.num_processes}.")
        if self.num_processes > 1 and not self.coordinator_address:
            raise ValueError("distributed.num_processes > 1 needs distributed."
                             "coordinator_address (host:port of process 0).")
        if self.coordinator_address and ":" not in self.coordinator_address:
            raise ValueError(f"distributed.coordinator_address={self.coordinator_address!r} "
                             f"must be host:port.")


def _under_slurm() -> bool:
    return int(os.environ.get("SLURM_NTASKS", "1")) > 1


def joins_a_job(cfg: DistributedConfig) -> bool:
    """Whether `initialize(cfg)` will join a multi-host job: `on`, several processes given, or
    `auto` under a SLURM job of several tasks. Until it has joined, nothing may query a device
    (the device ids are then checked after the join)."""
    return cfg.mode != "off" and (cfg.mode == "on" or cfg.num_processes > 1 or _under_slurm())


def initialize(cfg: DistributedConfig) -> bool:
    """Joins the job if configured; returns True when running with several processes."""
    explicit = cfg.num_processes > 1
    if not joins_a_job(cfg):
        return False
    if jax.distributed.is_initialized():
        return jax.process_count() > 1
    kwargs = dict(initialization_timeout=cfg.init_timeout_s,
                  heartbeat_timeout_seconds=cfg.heartbeat_timeout_s)
    if cfg.local_device_ids is not None:
        kwargs["local_device_ids"] = list(cfg.local_device_ids)
    if explicit:
        kwargs.update(coordinator_address=cfg.coordinator_address,
                      num_processes=cfg.num_processes, process_id=cfg.process_id)
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as e:  # name what we tried; the raw error is chained
        raise RuntimeError(
            f"could not join the distributed job (coordinator "
            f"{cfg.coordinator_address or 'auto-detected'}, process {cfg.process_id} of "
            f"{cfg.num_processes}): {e}") from e
    return jax.process_count() > 1


def is_main_process() -> bool:
    """Process 0 writes logs and checkpoints."""
    return jax.process_index() == 0


def gather_episodes(episodes: list[tuple], capacity: int, num_metrics: int = 0
                    ) -> list[tuple]:
    """Every process's finished games of this update, on every process: (return, length,
    *`num_metrics` episode metrics) each.

    `capacity` bounds the games one process can finish per update (T * B: a step ends at most
    one game per env), so the padded exchange has a fixed shape and compiles once.
    """
    if jax.process_count() == 1:
        return episodes
    import numpy as np
    from jax.experimental import multihost_utils
    if len(episodes) > capacity:
        raise ValueError(f"{len(episodes)} episodes exceed capacity {capacity}")
    width = 3 + num_metrics
    local = np.zeros((capacity, width), np.float32)  # present, return, length, metrics
    for i, game in enumerate(episodes):
        local[i] = (1.0, *game)
    every = np.asarray(multihost_utils.process_allgather(local)).reshape(-1, width)
    return [(float(row[1]), int(row[2]), *(float(v) for v in row[3:]))
            for row in every if row[0] > 0]


class PeerLost(RuntimeError):
    """A collective failed because another process of the job died or became unreachable."""


# Substrings of the runtime errors a dead peer causes in a collective (gloo on CPU, NCCL on
# GPU) or in the coordination service; matched case-insensitively.
_PEER_ERRORS = ("gloo", "nccl", "connection reset", "connection closed", "connection refused",
                "broken pipe", "socket closed", "heartbeat", "coordination service",
                "remote task has failed")


@contextlib.contextmanager
def peer_check(updates: int, env_steps: int):
    """Around an update's collectives (the update after counter `updates`, at `env_steps`): a
    collective failing because another process died becomes `PeerLost`, naming it."""
    try:
        yield
    except Exception as e:
        lost = lost_peer(e)
        if lost is None:
            raise
        raise PeerLost(
            f"lost {lost} during update {updates + 1:,d} (env step {env_steps:,d}); that "
            f"update's learner state is incomplete and is not saved.") from e


def lost_peer(error: BaseException) -> str | None:
    """Names the lost process ("process 1 of 2") when `error` is a collective failing
    because a peer died; None otherwise (including single-process runs).

    gloo reports the peer's socket address, not its rank: with two processes it is the other
    one; with more, the message says which address failed."""
    if jax.process_count() == 1 or not isinstance(error, jax.errors.JaxRuntimeError):
        return None
    text = str(error)
    if not any(marker in text.lower() for marker in _PEER_ERRORS):
        return None
    n, me = jax.process_count(), jax.process_index()
    detail = text.strip().splitlines()[0][:200]
    who = f"process {1 - me} of 2" if n == 2 else f"a peer process (of {n})"
    return f"{who} ({detail})"


def exit_lost_peer(message: str, status: int = 1) -> None:
    """Prints `message`, flushes, and ends the process at once with `status`, skipping the
    atexit `jax.distributed.shutdown()` that would abort with a dead peer (see module doc)."""
    print(f"ERROR: {message} Exiting (status {status}).", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(status)
