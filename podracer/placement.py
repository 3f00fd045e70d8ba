"""Process-local data as global arrays, for both runtimes: each process passes its own part
(an identical copy for a replicated sharding, its slice for a split one) and every leaf becomes
one `jax.Array` over the whole mesh, on one host or many. Typed PRNG keys are placed through
their key data. Sebulba places its learner state with it, Anakin its state and env runners."""
from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Sharding

from podracer.agent import PyTree


def place(tree: PyTree, sharding: Sharding, copy: bool = False) -> PyTree:
    """Every leaf of `tree` (this process's data) as a global array with `sharding`.

    Args:
      tree: this process's data: its identical copy for a replicated `sharding`, its local
        part for one split over the devices (the global shape counts every process's).
      sharding: the placement over the global mesh.
      copy: place fresh host copies, so that no two leaves share a buffer (a computation that
        donates its inputs cannot donate one buffer twice, e.g. an LSTM's zero (c, h) state).

    Returns:
      `tree` with every leaf a global `jax.Array` (typed keys stay typed keys).
    """
    if jax.process_count() == 1 and not copy:  # this process's data is the whole array
        return jax.device_put(tree, sharding)

    def to_global(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):  # typed keys: via key data
            data = to_global(jax.random.key_data(x))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        x = np.array(x) if copy else np.asarray(x)
        if jax.process_count() == 1:
            return jax.device_put(x, sharding)
        return jax.make_array_from_process_local_data(sharding, x)
    return jax.tree.map(to_global, tree)
