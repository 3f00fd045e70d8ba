"""The learner's non-finite guard (podracer.finite.keep_finite) on its own, over 2 devices:
it decides on the new learner state, never on the metrics alone, and a skipped update keeps the
floating-point state while its counters advance."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, PartitionSpec as P

from podracer.finite import all_finite, keep_finite

_OLD = {"w": jnp.zeros(3), "opt": {"nu": jnp.zeros(2)}, "step": jnp.asarray(0)}


def _step(old, metrics, w_delta=1.0, nu_delta=1.0):
    """A fake update: parameters, an optimizer statistic and a counter move on."""
    new = {"w": old["w"] + w_delta, "opt": {"nu": old["opt"]["nu"] + nu_delta},
           "step": old["step"] + 1}
    return new, metrics


def _guarded(update_fn):
    """Runs keep_finite over 2 faked devices; device i's update is update_fn(old, i)."""
    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))

    def per_device(old, idx):
        new, metrics = update_fn(old, idx[0])
        return keep_finite(old, new, metrics, "d")

    f = jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P("d")), out_specs=(P(), P()),
                      check_vma=False)
    return jax.jit(f)(_OLD, jnp.arange(2))


def test_python_number_metrics_are_accepted():
    state, metrics = _guarded(lambda old, i: _step(old, {"lr": 3e-4, "n": 2,
                                                         "loss": jnp.float32(1.0)}))
    np.testing.assert_array_equal(state["w"], np.ones(3))
    assert float(metrics["nonfinite/skipped"]) == 0.0 and np.isclose(float(metrics["lr"]), 3e-4)


def test_a_nonfinite_metric_alone_keeps_the_update_and_is_reported():
    # e.g. a diagnostic averaged over no valid steps: NaN, with a finite update
    state, metrics = _guarded(lambda old, i: _step(old, {"adv/std": jnp.float32(jnp.nan),
                                                         "loss": jnp.float32(1.0)}))
    np.testing.assert_array_equal(state["w"], np.ones(3))  # the new state
    assert int(state["step"]) == 1 and float(metrics["nonfinite/skipped"]) == 0.0
    assert np.isnan(float(metrics["adv/std"]))  # the metric itself is reported as it is


def test_nan_params_on_one_device_skip_the_update_on_all():
    state, metrics = _guarded(lambda old, i: _step(old, {"loss": jnp.float32(1.0)},
                                                   w_delta=jnp.where(i == 1, jnp.nan, 1.0)))
    np.testing.assert_array_equal(state["w"], np.zeros(3))  # the old state, everywhere
    np.testing.assert_array_equal(state["opt"]["nu"], np.zeros(2))
    assert float(metrics["nonfinite/skipped"]) == 1.0
    # The counter (an integer leaf) advances as the update made it: a skipped update still
    # consumed a batch, as the loop's own counter says (a resumed schedule starts from it).
    assert int(state["step"]) == 1


def test_a_nonfinite_optimizer_state_alone_skips_the_update():
    state, metrics = _guarded(lambda old, i: _step(old, {"loss": jnp.float32(1.0)},
                                                   nu_delta=jnp.inf))
    np.testing.assert_array_equal(state["w"], np.zeros(3))
    np.testing.assert_array_equal(state["opt"]["nu"], np.zeros(2))
    assert float(metrics["nonfinite/skipped"]) == 1.0


def test_a_nan_gradient_through_optax_skips_the_update():
    """A NaN gradient on one device only (clipped, then Adam) poisons params and moments."""
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    params = {"w": jnp.zeros(3)}
    old = {"params": params, "opt": opt.init(params)}
    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))

    def per_device(old, idx):
        grads = {"w": jnp.where(idx[0] == 1, jnp.nan, 1.0) * jnp.ones(3)}
        updates, opt_state = opt.update(grads, old["opt"], old["params"])
        new = {"params": optax.apply_updates(old["params"], updates), "opt": opt_state}
        return keep_finite(old, new, {"optim/grad_norm": optax.tree.norm(grads)}, "d")

    f = jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P("d")), out_specs=(P(), P()),
                      check_vma=False)
    state, metrics = jax.jit(f)(old, jnp.arange(2))
    np.testing.assert_array_equal(state["params"]["w"], np.zeros(3))
    assert float(metrics["nonfinite/skipped"]) == 1.0


def test_all_finite_skips_integers_and_keys():
    tree = {"i": jnp.arange(3), "k": jax.random.key(0), "f": 1.5, "x": jnp.ones(2)}
    assert bool(all_finite(tree))
    assert not bool(all_finite({**tree, "x": jnp.array([1.0, jnp.inf])}))
