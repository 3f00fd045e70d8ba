"""Which devices act and which learn; validated up front with clear errors.

With several processes (hosts), every process uses the same local ids; the learner mesh spans
the learner devices of all processes (process-major), so one update spans every host.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

LEARNER_AXIS = "learner"


@dataclasses.dataclass(frozen=True)
class Topology:
    """Actor and learner devices of this host, and the learner mesh.

    Device ids are indices into `jax.local_devices()`; one device may both act and learn.
    """

    actor_devices: tuple[jax.Device, ...]    # this process's actor devices
    learner_devices: tuple[jax.Device, ...]  # this process's learner devices
    mesh: Mesh                               # learner devices of all processes
    local_mesh: Mesh                         # this process's learner devices only

    @property
    def num_learners(self) -> int:
        """Learner devices over all processes."""
        return self.mesh.devices.size

    @property
    def num_processes(self) -> int:
        return jax.process_count()

    def local_batch_sharded(self) -> NamedSharding:
        """Where an actor puts its rollout: split along envs over this host's learners."""
        return NamedSharding(self.local_mesh, P(None, LEARNER_AXIS))

    def to_global_batch(self, tree):
        """Joins every process's locally sharded rollout into one array over the global mesh.

        Process p's env columns land at block p of the batch axis; no data moves.
        """
        if self.num_processes == 1:
            return tree
        sharding = self.batch_sharded()

        def join(x):
            shape = (x.shape[0], x.shape[1] * self.num_processes) + x.shape[2:]
            shards = [s.data for s in x.addressable_shards]
            return jax.make_array_from_single_device_arrays(shape, sharding, shards)
        return jax.tree.map(join, tree)

    def replicated(self) -> NamedSharding:
        """Sharding of the learner state: one full copy per learner device."""
        return NamedSharding(self.mesh, P())

    def batch_sharded(self, batch_axis: int = 1) -> NamedSharding:
        """Sharding of time-major rollouts: split along the environment axis."""
        spec = [None] * batch_axis + [LEARNER_AXIS]
        return NamedSharding(self.mesh, P(*spec))


def _check_ids(ids: Sequence[int], name: str, num_local: int) -> None:
    if len(ids) == 0:
        raise ValueError(f"{name} is empty; give at least one local device id "
                         f"(0..{num_local - 1}).")
    for i in ids:
        if not isinstance(i, (int, np.integer)) or not 0 <= i < num_local:
            raise ValueError(f"{name} contains {i!r}, but this host has {num_local} local "
                             f"device(s): allowed ids are 0..{num_local - 1}.")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{name}={list(ids)} repeats a device id.")


def check_env_split(num_envs_per_thread: int, learner_device_ids: Sequence[int]) -> None:
    """Each rollout is split along the env axis over this host's learner devices; a
    ValueError naming num_envs unless it divides evenly (no device query: checkable early)."""
    n_learn = len(learner_device_ids)  # per process: each host splits its own rollouts
    if num_envs_per_thread % n_learn != 0:
        raise ValueError(
            f"num_envs={num_envs_per_thread} (per actor thread) must be divisible by the number "
            f"of learner devices ({n_learn}, learner_device_ids={list(learner_device_ids)}): "
            f"each rollout is split along the environment axis across the learners.")


def make_topology(actor_device_ids: Sequence[int], learner_device_ids: Sequence[int],
                  num_envs_per_thread: int) -> Topology:
    """Builds and validates the topology; raises ValueError naming the bad value."""
    local = jax.local_devices()
    actor_device_ids, learner_device_ids = list(actor_device_ids), list(learner_device_ids)
    _check_ids(actor_device_ids, "actor_device_ids", len(local))
    _check_ids(learner_device_ids, "learner_device_ids", len(local))
    check_env_split(num_envs_per_thread, learner_device_ids)
    learners = tuple(local[i] for i in learner_device_ids)
    everyone = [jax.local_devices(process_index=p)[i]
                for p in range(jax.process_count()) for i in learner_device_ids]
    return Topology(tuple(local[i] for i in actor_device_ids), learners,
                    Mesh(np.array(everyone), (LEARNER_AXIS,)),
                    Mesh(np.array(learners), (LEARNER_AXIS,)))


def local_replica(tree):
    """This process's copy of an array tree replicated over devices (no cross-host copy)."""
    # addressable_data(0): the first local shard without building every Shard object (the
    # learner calls this once per update when publishing parameters).
    return jax.tree.map(lambda x: x.addressable_data(0) if isinstance(x, jax.Array) else x, tree)
