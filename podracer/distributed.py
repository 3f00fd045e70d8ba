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
import functools
import os
import sys
from typing import Sequence

import jax


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    mode: str = "auto"             # "auto": join if configured or under SLURM; "off"; "on"
    coordinator_address: str = ""  # host:port of process 0; "" = detect from the cluster
    # host:port process 0's coordinator listens on; "" = the coordinator's own address when it
    # is a loopback one (a job on one machine), else every interface, port as given (jax's)
    coordinator_bind_address: str = ""
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
        for name in ("coordinator_address", "coordinator_bind_address"):
            value = getattr(self, name)
            if value and ":" not in value:
                raise ValueError(f"distributed.{name}={value!r} must be host:port.")


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
    bind = bind_address(cfg)
    if bind:
        kwargs["coordinator_bind_address"] = bind
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as e:  # name what we tried; the raw error is chained
        raise RuntimeError(
            f"could not join the distributed job (coordinator "
            f"{cfg.coordinator_address or 'auto-detected'}, process {cfg.process_id} of "
            f"{cfg.num_processes}): {e}") from e
    return jax.process_count() > 1


def bind_address(cfg: DistributedConfig) -> str:
    """Where process 0's coordinator listens: `coordinator_bind_address` when given; the
    coordinator's own address when its host is loopback (every process is on this machine, so
    nothing else need reach it); "" otherwise (jax's default: every interface, same port)."""
    if cfg.coordinator_bind_address:
        return cfg.coordinator_bind_address
    host = cfg.coordinator_address.rpartition(":")[0].strip("[]")
    return cfg.coordinator_address if host and _is_loopback(host) else ""


def _is_loopback(host: str) -> bool:
    """Whether every address `host` resolves to is a loopback one (False if it resolves to
    none)."""
    import ipaddress
    import socket
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback
                               for info in infos)


def is_main_process() -> bool:
    """Process 0 writes logs and checkpoints."""
    return jax.process_index() == 0


def allgather_host(local) -> "np.ndarray":
    """Every process's `local` (a host array of the same shape and dtype on every process),
    stacked in process order: [num_processes, *local.shape], on every process.

    The exchange is one small program on one device per process (each process's first local
    device), and it returns only once that program has finished: the next program a loop
    sends (an update with its own collectives) can never meet this one's messages on a shared
    communicator. jax's `process_allgather` runs on every local device and returns when the
    first has finished; the rest may still be exchanging when the next update starts, and on
    gloo the two programs' messages then cross ("1536 vs 32 ... Is there a distributed
    collective mismatch", tests/slow/podracer/test_host_exchange.py).
    """
    import numpy as np
    local = np.asarray(local)
    if jax.process_count() == 1:
        return local[None]
    mesh = _exchange_mesh()
    from jax.sharding import NamedSharding, PartitionSpec as P
    stacked = jax.make_array_from_process_local_data(NamedSharding(mesh, P("processes")),
                                                     local[None])
    out = _replicate(stacked, NamedSharding(mesh, P()))
    return np.asarray(jax.block_until_ready(out).addressable_data(0))


def broadcast_host(value) -> "np.ndarray":
    """Process 0's `value` (a host array of the same shape and dtype on every process) on
    every process; see `allgather_host`."""
    return allgather_host(value)[0]


@functools.lru_cache(maxsize=None)
def _exchange_mesh():
    """A mesh of one device per process (its first local device), in process order."""
    import numpy as np
    first: dict[int, jax.Device] = {}
    for d in sorted(jax.devices(), key=lambda d: d.id):
        first.setdefault(d.process_index, d)
    return jax.sharding.Mesh(np.array([first[p] for p in sorted(first)]), ("processes",))


@functools.partial(jax.jit, static_argnums=1)
def _replicate(x, sharding):
    return jax.lax.with_sharding_constraint(x, sharding)


def gather_episodes(episodes: list[tuple], capacity: int, num_metrics: int = 0
                    ) -> list[tuple]:
    """Every process's finished games of this update, on every process: (return, length,
    *`num_metrics` episode metrics) each.

    `capacity` bounds the games one process can finish per update (T * B: a step ends at most
    one game per env), so the padded exchange has a fixed shape and compiles once.
    """
    return gather_episode_groups([episodes], capacity, num_metrics)[0]


def gather_episode_groups(groups: list[list[tuple]], capacity: int, num_metrics: int = 0
                          ) -> list[list[tuple]]:
    """`gather_episodes` for several groups of games at once (Anakin: one per update of a
    call and member), in one exchange: group i of every process joins group i."""
    if jax.process_count() == 1:
        return groups
    import numpy as np
    width = 3 + num_metrics
    local = np.zeros((len(groups), capacity, width), np.float32)  # present, return, length, ..
    for g, episodes in enumerate(groups):
        if len(episodes) > capacity:
            raise ValueError(f"{len(episodes)} episodes exceed capacity {capacity}")
        for i, game in enumerate(episodes):
            local[g, i] = (1.0, *game)
    every = allgather_host(local)  # [process, group, capacity, width]
    return [[(float(row[1]), int(row[2]), *(float(v) for v in row[3:]))
             for row in every[:, g].reshape(-1, width) if row[0] > 0]
            for g in range(len(groups))]


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
    # A collective that runs as it is dispatched (a one-device exchange on CPU) raises its
    # runtime error as a ValueError.
    if jax.process_count() == 1 or not isinstance(error, (jax.errors.JaxRuntimeError,
                                                          ValueError)):
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
