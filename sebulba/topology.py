"""Which local devices act and which learn; validated up front with clear errors."""
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

    actor_devices: tuple[jax.Device, ...]
    learner_devices: tuple[jax.Device, ...]
    mesh: Mesh

    @property
    def num_learners(self) -> int:
        return len(self.learner_devices)

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


def make_topology(actor_device_ids: Sequence[int], learner_device_ids: Sequence[int],
                  num_envs_per_thread: int) -> Topology:
    """Builds and validates the topology; raises ValueError naming the bad value."""
    local = jax.local_devices()
    actor_device_ids, learner_device_ids = list(actor_device_ids), list(learner_device_ids)
    _check_ids(actor_device_ids, "actor_device_ids", len(local))
    _check_ids(learner_device_ids, "learner_device_ids", len(local))
    n_learn = len(learner_device_ids)
    if num_envs_per_thread % n_learn != 0:
        raise ValueError(
            f"num_envs={num_envs_per_thread} (per actor thread) must be divisible by the number "
            f"of learner devices ({n_learn}, learner_device_ids={learner_device_ids}): each "
            f"rollout is split along the environment axis across the learners.")
    learners = tuple(local[i] for i in learner_device_ids)
    mesh = Mesh(np.array(learners), (LEARNER_AXIS,))
    return Topology(tuple(local[i] for i in actor_device_ids), learners, mesh)
