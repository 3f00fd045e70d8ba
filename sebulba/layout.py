"""How the actors carry the batch on this machine: actor threads and EnvPool worker threads,
chosen from the CPU cores. The layout changes the speed, never the algorithm: `num_envs`
(per process) is the batch whatever it chooses (sebulba/runtime_config.py).

`num_actor_threads = 0` and `env.num_threads = 0` (the defaults) mean "fit this machine":
- actor threads per actor device: one per 8 cores the process may use, 1 to 4, and the most of
  those that split the device's envs into whole shares (each a multiple of the learner
  devices). Each thread's Python hot loop keeps about one core busy; the rest step its
  environments. On 2 cores one thread beats two (measured: CartPole 18k vs 10k steps/s), on
  16 cores two threads keep the policy inference of one GPU and 14 env threads busy.
- EnvPool worker threads per pool: the cores shared out over the actor threads of this host
  (at least 1), so several pools do not oversubscribe the cores.

An explicit value (> 0) is always kept; one that does not split `num_envs` is refused when the
config is read (RuntimeConfig names the numbers). `resolve` is the one place the auto fields
are decided; a run prints the result at start.
"""
from __future__ import annotations

import dataclasses
import os

from sebulba.runtime_config import RuntimeConfig


def usable_cpus() -> int:
    """Cores this process may run on (the affinity mask: containers and SLURM restrict it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclasses.dataclass(frozen=True)
class Layout:
    runtime: RuntimeConfig  # with num_actor_threads resolved
    env_threads: int        # EnvPool worker threads per pool
    cpus: int
    auto: tuple[str, ...]   # which fields were chosen here
    note: str = ""          # why the auto choice is below the cores' (a split that divides)
    env_workers: int = 0    # env.workers: worker processes per pool of a Python env

    @property
    def actor_threads(self) -> int:
        return self.runtime.num_actor_threads

    def describe(self) -> str:
        rc = self.runtime
        chosen = f" (auto: {', '.join(self.auto)}{self.note})" if self.auto else ""
        steps = (f"{self.env_workers} env worker process(es) per pool" if self.env_workers
                 else f"EnvPool {self.env_threads} worker thread(s) per pool")
        return (f"layout: {rc.num_envs} envs per process = actor devices "
                f"{list(rc.actor_device_ids)} x {self.actor_threads} thread(s) x "
                f"{rc.envs_per_thread} envs, {steps}, learner devices "
                f"{list(rc.learner_device_ids)}, {self.cpus} CPU cores{chosen}")


def _splits(rc: RuntimeConfig, threads: int) -> bool:
    shares = len(rc.actor_device_ids) * threads
    return (rc.num_envs % shares == 0
            and (rc.num_envs // shares) % len(rc.learner_device_ids) == 0)


def resolve(rc: RuntimeConfig, env_threads: int = 1, cpus: int | None = None,
            env_workers: int = 0) -> Layout:
    """Resolves the 0 (auto) fields, `rc.num_actor_threads` and `env_threads` (EnvPool worker
    threads per pool, `env.num_threads`), for a host with `cpus` cores (default:
    usable_cpus()). `env_workers` (env.workers) is only reported."""
    cpus = usable_cpus() if cpus is None else cpus
    devices = len(rc.actor_device_ids)
    auto, note = [], ""
    threads = rc.num_actor_threads
    if threads == 0:
        wanted = max(1, min(4, cpus // (8 * devices)))
        threads = next(t for t in range(wanted, 0, -1) if _splits(rc, t))
        if threads < wanted:
            note = (f"; {wanted} by the cores, {threads} to split num_envs={rc.num_envs} "
                    f"into whole shares")
        auto.append("num_actor_threads")
        rc = dataclasses.replace(rc, num_actor_threads=threads)
    if env_threads == 0:
        env_threads = max(1, cpus // (devices * threads))
        auto.append("env.num_threads")
    return Layout(rc, env_threads, cpus, tuple(auto), note, env_workers)
