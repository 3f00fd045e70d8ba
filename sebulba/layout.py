"""The default actor layout: actor threads and EnvPool worker threads chosen from the CPU cores.

`num_actor_threads = 0` and `env.num_threads = 0` (the defaults) mean "fit this machine":
- actor threads per actor device: one per 8 cores the process may use, 1 to 4. Each thread's
  Python hot loop keeps about one core busy; the rest step its environments. On 2 cores one
  thread beats two (measured: CartPole 18k vs 10k steps/s), on 16 cores two threads keep the
  policy inference of one GPU and 14 env threads busy.
- EnvPool worker threads per pool: the cores shared out over the actor threads of this host
  (at least 1), so several pools do not oversubscribe the cores.

An explicit value (> 0) is always kept. `num_envs` stays per actor thread: an auto layout on a
bigger machine runs more envs per update (the printed layout says how many).
"""
from __future__ import annotations

import dataclasses
import os


def usable_cpus() -> int:
    """Cores this process may run on (the affinity mask: containers and SLURM restrict it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclasses.dataclass(frozen=True)
class Layout:
    actor_threads: int   # per actor device
    env_threads: int     # EnvPool worker threads per pool
    cpus: int
    auto: tuple[str, ...]  # which fields were chosen here

    def describe(self, num_actor_devices: int, num_envs: int, learner_ids, actor_ids) -> str:
        chosen = f" (auto: {', '.join(self.auto)})" if self.auto else ""
        return (f"layout: actor devices {list(actor_ids)} x {self.actor_threads} thread(s) x "
                f"{num_envs} envs = {num_actor_devices * self.actor_threads * num_envs} envs "
                f"per host, EnvPool {self.env_threads} worker thread(s) per pool, learner "
                f"devices {list(learner_ids)}, {self.cpus} CPU cores{chosen}")


def choose(num_actor_threads: int, env_threads: int, num_actor_devices: int,
           cpus: int | None = None) -> Layout:
    """Resolves the 0 (auto) fields for a host with `cpus` cores (default: usable_cpus())."""
    cpus = usable_cpus() if cpus is None else cpus
    auto = []
    if num_actor_threads == 0:
        num_actor_threads = max(1, min(4, cpus // (8 * num_actor_devices)))
        auto.append("num_actor_threads")
    if env_threads == 0:
        env_threads = max(1, cpus // (num_actor_devices * num_actor_threads))
        auto.append("env.num_threads")
    return Layout(num_actor_threads, env_threads, cpus, tuple(auto))
