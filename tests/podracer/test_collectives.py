"""podracer.collectives: jax.lax's collectives on several devices, no kernel on one."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from podracer import collectives

NAMES = ("pmean", "psum", "pmin", "all_gather_tiled")


def _reference(name, x, axis):
    if name == "all_gather_tiled":
        return jax.lax.all_gather(x, axis, tiled=True)
    return getattr(jax.lax, name)(x, axis)


def _sharded(fn, n):
    """(program, its argument placed as the runtimes place it): fn over n devices, each
    holding one block of the argument's leading axis."""
    mesh = Mesh(np.array(jax.devices()[:n]), ("d",))
    program = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("d"), out_specs=P("d"),
                                    check_vma=False))
    return program, lambda x: jax.device_put(x, NamedSharding(mesh, P("d")))


def _run(fn, n, x):
    program, place = _sharded(fn, n)
    return program(place(x))


def _compiled_text(fn, x):
    program, place = _sharded(fn, 1)
    return program.lower(place(x)).compile().as_text()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_same_values_as_jax_lax(name, n):
    x = jnp.arange(n * 3, dtype=jnp.float32).reshape(n * 3) * 1.5 - 4.0
    ours = _run(lambda v: getattr(collectives, name)(v, "d"), n, x)
    ref = _run(lambda v: _reference(name, v, "d"), n, x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))


@pytest.mark.parametrize("name", NAMES)
def test_one_device_compiles_no_collective(name):
    """The point of the wrappers: XLA:CPU keeps a one-device all-reduce as a kernel."""
    x = jnp.ones((6,), jnp.float32)
    text = _compiled_text(lambda v: getattr(collectives, name)(v, "d"), x)
    assert "all-reduce" not in text and "all-gather" not in text
    ref = _compiled_text(lambda v: _reference(name, v, "d"), x)
    if name != "all_gather_tiled":  # the check above would pass vacuously if XLA removed them
        assert "all-reduce" in ref


def test_under_vmap_inside_shard_map():
    """Population members vmapped inside the shard_map: the axis size is still the mesh's."""
    x = jnp.arange(8, dtype=jnp.float32).reshape(2, 4)  # [devices * 1, members]
    fn = jax.vmap(lambda v: collectives.pmean(v, "d"), in_axes=1, out_axes=1)
    np.testing.assert_allclose(np.asarray(_run(fn, 2, x)),
                               np.broadcast_to(x.mean(axis=0), (2, 4)))
