"""The learner's non-finite guard (sebulba.learner.keep_finite) on its own, over 2 devices."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from sebulba.learner import all_finite, keep_finite


def _guarded(metrics_fn):
    """Runs keep_finite over 2 faked devices; device 1's update is metrics_fn(1)."""
    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))

    def per_device(old, idx):
        new = {"w": old["w"] + 1.0, "step": old["step"] + 1}
        return keep_finite(old, new, metrics_fn(idx[0]), "d")

    f = jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P("d")), out_specs=(P(), P()),
                      check_vma=False)
    return jax.jit(f)({"w": jnp.zeros(3), "step": jnp.asarray(0)}, jnp.arange(2))


def test_python_number_metrics_are_accepted():
    state, metrics = _guarded(lambda i: {"lr": 3e-4, "n": 2, "loss": jnp.float32(1.0)})
    np.testing.assert_array_equal(state["w"], np.ones(3))
    assert float(metrics["nonfinite/skipped"]) == 0.0 and np.isclose(float(metrics["lr"]), 3e-4)


def test_nan_on_one_device_skips_the_update_on_all():
    state, metrics = _guarded(lambda i: {"loss": jnp.where(i == 1, jnp.nan, 1.0)})
    np.testing.assert_array_equal(state["w"], np.zeros(3))  # the old state, everywhere
    assert int(state["step"]) == 0 and float(metrics["nonfinite/skipped"]) == 1.0


def test_all_finite_skips_integers_and_keys():
    tree = {"i": jnp.arange(3), "k": jax.random.key(0), "f": 1.5, "x": jnp.ones(2)}
    assert bool(all_finite(tree))
    assert not bool(all_finite({**tree, "x": jnp.array([1.0, jnp.inf])}))
