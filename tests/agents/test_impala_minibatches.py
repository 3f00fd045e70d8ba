"""IMPALA's `num_minibatches` (cleanba's split of an update into several gradient steps): an
update with M minibatches is M plain steps on the interleaved env columns, one after the other;
N learner devices take the same steps as one; the learning rate stays the update's; bad
splits fail early naming the fields."""
import dataclasses

import jax
import numpy as np
import pytest

import agents.impala as impala
from agents.impala.learning import make_optimizer
from networks.config import NetworkConfig
from sebulba.learner import concat_rollouts
from sebulba.runtime_config import RuntimeConfig
from tests.helpers import (IMPALA_640, ACTION_SPACES, ACTIONS, learner_updates, random_rollout,
                           small_network)

T, B, OBS = 6, 8, 4
NET = small_network(ACTION_SPACES["discrete"])


def _rollouts():
    rng = np.random.default_rng(0)
    return [random_rollout(rng, T, B, OBS, ACTIONS) for _ in range(2)]


def _update(cfg, rollouts, learner_ids=(0,), updates=1):
    agent = impala.make_agent(NET, cfg, num_updates=10)
    return learner_updates(agent, [tuple(rollouts)] * updates, learner_ids)


def _assert_trees_close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("optimizer", ["rmsprop", "adam"])
def test_minibatch_update_is_plain_steps_on_interleaved_columns(optimizer):
    rollouts = _rollouts()
    cfg = impala.ImpalaConfig(optimizer=optimizer, learning_rate=1e-2, max_grad_norm=0.0,
                              lr_decay=False, rmsprop_eps=IMPALA_640["rmsprop_eps"])
    split, _ = _update(dataclasses.replace(cfg, num_minibatches=4), rollouts)
    # Reference: a one-step agent fed minibatch i = columns i, i+4, ... of the joined batch.
    joined = concat_rollouts(rollouts)
    state, _ = learner_updates(impala.make_agent(NET, cfg, num_updates=10),
                               [(jax.tree.map(lambda x: x[:, i::4], joined),) for i in range(4)])
    _assert_trees_close(split.params, state.params)
    assert int(split.update) == 1  # one update, four gradient steps
    whole, _ = _update(cfg, rollouts)  # and not the same as one step on everything
    assert max(float(np.abs(a - b).max()) for a, b in zip(
        jax.tree.leaves(whole.params), jax.tree.leaves(split.params))) > 1e-3


def test_minibatches_on_four_learner_devices_equal_one_device():
    rollouts = _rollouts()
    cfg = impala.ImpalaConfig(learning_rate=1e-2, num_minibatches=2, **IMPALA_640)
    one, m1 = _update(cfg, rollouts, updates=2)
    four, m4 = _update(cfg, rollouts, learner_ids=(0, 1, 2, 3), updates=2)
    _assert_trees_close(one.params, four.params)
    for k in m1:
        np.testing.assert_allclose(m1[k], m4[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_every_minibatch_step_of_an_update_uses_the_updates_learning_rate():
    # RMSProp on a scalar with gradient 1: step t moves by lr_t / sqrt(nu_t + eps), with
    # nu_t = 1 - decay^(t+1) (optax starts nu at 0), so each step's rate can be read back.
    cfg = impala.ImpalaConfig(learning_rate=0.1, num_minibatches=2, max_grad_norm=0.0,
                              rmsprop_eps=0.0)
    opt, schedule = make_optimizer(cfg, num_updates=3)
    params, rates = np.float32(0.0), []
    state = opt.init(params)
    for t in range(7):
        updates, state = opt.update(np.float32(1.0), state, params)
        nu = 1.0 - cfg.rmsprop_decay ** (t + 1)
        rates.append(-float(updates) * np.sqrt(nu))
    np.testing.assert_allclose(rates, [0.1, 0.1, 0.1 * 2 / 3, 0.1 * 2 / 3, 0.1 / 3, 0.1 / 3, 0.0],
                               rtol=1e-5, atol=1e-8)
    assert [float(schedule(u)) for u in range(4)] == pytest.approx([0.1, 0.1 * 2 / 3, 0.1 / 3, 0])


def test_bad_minibatch_counts_fail_early_naming_the_fields():
    with pytest.raises(ValueError, match=r"num_minibatches=0 must be an int >= 1"):
        impala.ImpalaConfig(num_minibatches=0)
    batch = RuntimeConfig(actor_device_ids=(0,), learner_device_ids=(0, 1),
                          num_actor_threads=2, num_envs=12, unroll_length=5).batch_shape(1)
    impala.check_minibatches(impala.ImpalaConfig(num_minibatches=3), batch, NetworkConfig())
    with pytest.raises(ValueError, match=r"^agent\.num_minibatches=4 must divide the 6 "
                                         r"environments each learner device holds per update"):
        impala.check_minibatches(impala.ImpalaConfig(num_minibatches=4), batch,
                                 NetworkConfig())
    # make_agent used directly (no config check): the learner step says the same at trace time.
    with pytest.raises(ValueError, match=r"num_minibatches=3 must divide the 16 environments"):
        _update(impala.ImpalaConfig(num_minibatches=3, **IMPALA_640), _rollouts())
