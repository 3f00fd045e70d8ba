"""The data-parallel learner: N learner devices must equal one device on the whole batch; its
metrics reach the host packed (one array per dtype) and come back whole.

This pins the gradient-averaging trap of shard_map (see agents/parallel.py): a sum instead of a
mean, or a double mean, would make these differ by a factor of N.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import agents.impala as impala
from sebulba.learner import MetricsPacker
from tests.helpers import (IMPALA_640, ACTION_SPACES, ACTIONS, learner_updates, random_rollout,
                           small_network)

T, B, OBS = 6, 8, 4


def _one_update(learner_ids, rollouts, cfg):
    agent = impala.make_agent(small_network(ACTION_SPACES["discrete"]), cfg, num_updates=10)
    state, metrics = learner_updates(agent, [tuple(rollouts)], learner_ids)
    return state.params, metrics


@pytest.mark.parametrize("optimizer", ["rmsprop", "adam"])
def test_sharded_update_equals_single_device(optimizer):
    rng = np.random.default_rng(0)
    rollouts = [random_rollout(rng, T, B, OBS, ACTIONS) for _ in range(2)]
    cfg = impala.ImpalaConfig(optimizer=optimizer, learning_rate=1e-2, max_grad_norm=0.0,
                              rmsprop_eps=IMPALA_640["rmsprop_eps"])
    p1, m1 = _one_update([0], rollouts, cfg)
    p4, m4 = _one_update([0, 1, 2, 3], rollouts, cfg)
    for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p4)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    for k in m1:
        np.testing.assert_allclose(m1[k], m4[k], rtol=1e-4, atol=1e-6, err_msg=k)
    # The update really moved the parameters (the comparison is not vacuous).
    p0 = _initial_params(rollouts)
    moved = max(float(np.abs(a - b).max()) for a, b in zip(jax.tree.leaves(p0),
                                                           jax.tree.leaves(p1)))
    assert moved > 1e-3


def _initial_params(rollouts):
    net = small_network(ACTION_SPACES["discrete"])
    return jax.device_get(net.init(jax.random.key(0), rollouts[0].obs[0]))


def test_metrics_packer_round_trips_every_metric_through_one_array_per_dtype():
    packer = MetricsPacker()
    metrics = {"loss/total": jnp.float32(1.5), "count": jnp.int32(2**30 + 1),
               "grad/norms": jnp.arange(3, dtype=jnp.float32), "flag": jnp.asarray(True),
               "a/nan": jnp.float32(jnp.nan)}
    packed = jax.jit(packer.pack)(metrics)
    assert sorted(packed) == ["bool", "float32", "int32"]  # one transfer per dtype
    host = packer.unpack(jax.device_get(packed))
    assert sorted(host) == sorted(metrics)
    for name, value in metrics.items():
        np.testing.assert_array_equal(host[name], np.asarray(value))
        assert host[name].shape == value.shape and host[name].dtype == value.dtype
    assert int(host["count"]) == 2**30 + 1  # integers are not squeezed through float32
