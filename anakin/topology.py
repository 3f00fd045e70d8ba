"""The devices an Anakin run uses, and its data placed on them: every device acts, steps envs and
learns (there is no actor/learner split, unlike sebulba/topology.py), so the mesh is 1-D over
`learner_device_ids` of every process (process-major). The learner state is replicated over
it; the env runners and finished games are split along the env axis (podracer/placement.py
makes process-local data global arrays).
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from podracer import placement

AXIS = "devices"
PyTree = Any


def make_mesh(device_ids, processes: bool = True) -> Mesh:
    """1-D mesh over `device_ids` of every process (process-major), as sebulba/topology.py."""
    local = jax.local_devices()
    for i in device_ids:
        if not isinstance(i, (int, np.integer)) or not 0 <= i < len(local):
            raise ValueError(f"device_ids contains {i!r}, but this host has {len(local)} local "
                             f"device(s): allowed ids are 0..{len(local) - 1}.")
    if not processes or jax.process_count() == 1:
        return Mesh(np.array([local[i] for i in device_ids]), (AXIS,))
    devs = [jax.local_devices(process_index=p)[i]
            for p in range(jax.process_count()) for i in device_ids]
    return Mesh(np.array(devs), (AXIS,))


def place_replicated(tree: PyTree, mesh: Mesh) -> PyTree:
    """One copy per device (each process passes its identical copy, multi-host), from fresh
    host copies: the update donates its inputs, and two leaves sharing one buffer (an LSTM's
    zero (c, h) state) cannot both be donated (podracer/placement.py)."""
    return placement.place(tree, NamedSharding(mesh, P()), copy=True)


def place_runner(runner: PyTree, mesh: Mesh) -> PyTree:
    """This process's envs split along axis 0 over its devices (global arrays, multi-host)."""
    return place_split(runner, mesh, 0)


def place_split(tree: PyTree, mesh: Mesh, env_axis: int) -> PyTree:
    """This process's data split along `env_axis` over the devices (global arrays)."""
    spec = (None,) * env_axis + (AXIS,)
    return placement.place(tree, NamedSharding(mesh, P(*spec)), copy=True)
