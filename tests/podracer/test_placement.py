"""podracer/placement.py: process-local data as global arrays, the one helper both runtimes
place with (Sebulba's learner state, Anakin's state and env runners). Over 4 faked CPU
devices; several processes: the multi-host tests (tests/slow/) run both runtimes through it."""
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from podracer.placement import place


def _mesh():
    return Mesh(np.array(jax.devices()[:4]), ("d",))


def test_replicated_leaves_are_whole_on_every_device_and_keys_stay_keys():
    key = jax.random.key(3)
    tree = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "key": key,
            "step": np.int32(7)}
    sharding = NamedSharding(_mesh(), P())
    out = place(tree, sharding)
    assert out["w"].sharding == sharding and len(out["w"].addressable_shards) == 4
    for shard in out["w"].addressable_shards:
        np.testing.assert_array_equal(shard.data, tree["w"])
    assert jax.dtypes.issubdtype(out["key"].dtype, jax.dtypes.prng_key)
    np.testing.assert_array_equal(jax.random.key_data(out["key"]), jax.random.key_data(key))
    assert int(out["step"]) == 7 and out["step"].dtype == np.int32


def test_a_split_sharding_gives_each_device_its_block():
    envs = np.arange(8 * 2, dtype=np.int32).reshape(8, 2)
    out = place(envs, NamedSharding(_mesh(), P("d")))
    blocks = sorted((s.index[0].start, np.asarray(s.data).tolist())
                    for s in out.addressable_shards)
    assert blocks == [(2 * i, envs[2 * i:2 * i + 2].tolist()) for i in range(4)]


def test_copy_gives_leaves_that_shared_a_buffer_their_own():
    """A donated update cannot donate one buffer twice: an LSTM's zero (c, h) state is one
    array twice in the tree until placed with copy=True."""
    zeros = np.zeros((4, 3), np.float32)
    sharding = NamedSharding(_mesh(), P())

    def pointers(tree):
        return [tree[k].addressable_shards[0].data.unsafe_buffer_pointer() for k in ("c", "h")]

    c, h = pointers(place({"c": zeros, "h": zeros}, sharding, copy=True))
    assert c != h
    donated = jax.jit(lambda t: jax.tree.map(lambda x: x + 1, t), donate_argnums=0)
    out = donated(place({"c": zeros, "h": zeros}, sharding, copy=True))
    np.testing.assert_array_equal(out["c"], np.ones((4, 3), np.float32))
