"""ParamsSource.publish: every actor device gets its own copy, never the learner's buffers."""
import jax
import jax.numpy as jnp
import numpy as np

from sebulba.pipeline import Lifetime, ParamsSource


def _pointers(tree):
    return {x.unsafe_buffer_pointer() for x in jax.tree.leaves(tree)}


def test_publish_copies_to_the_same_device_and_transfers_to_others():
    d0, d1 = jax.devices()[:2]
    params = jax.device_put({"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3)}, d0)
    source = ParamsSource([d0, d1], Lifetime())
    source.publish(params, version=3)
    for d in (d0, d1):
        got, version = source.get(d, min_version=3)
        assert version == 3
        assert all(x.devices() == {d} for x in jax.tree.leaves(got))
        np.testing.assert_array_equal(got["w"], params["w"])
    # The learner state behind `params` is donated to the next update: no shared buffer.
    same, _ = source.get(d0)
    assert not _pointers(same) & _pointers(params)
    jax.jit(lambda p: jax.tree.map(lambda x: x * 0, p), donate_argnums=0)(params)
    np.testing.assert_array_equal(source.get(d0)[0]["b"], np.ones(3))
