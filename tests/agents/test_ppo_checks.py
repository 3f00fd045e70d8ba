"""PPO's config checks (agents/ppo/checks.py): the rules that span the agent, the batch the
runtime gives it and the network section, with messages that name the fields."""
import dataclasses

import pytest

import agents.ppo as ppo
from networks.config import NetworkConfig
from podracer.batch import BatchShape
from sebulba.runtime_config import RuntimeConfig

# 24 envs per process over 3 learner devices: 8 env columns per learner, T = 5.
RUNTIME = RuntimeConfig(actor_device_ids=(0, 1), learner_device_ids=(1, 2, 3),
                        num_actor_threads=2, num_envs=24, unroll_length=5)
BATCH = RUNTIME.batch_shape(processes=1)


def _check(batch=BATCH, lstm_size=0, **agent):
    ppo.check_minibatches(ppo.PPOConfig(**agent), batch, NetworkConfig(lstm_size=lstm_size))


@pytest.mark.parametrize("num_minibatches", [1, 2, 4, 8])
def test_minibatches_that_split_the_columns_pass(num_minibatches):
    _check(num_minibatches=num_minibatches)


def test_minibatches_must_split_each_learners_env_columns():
    with pytest.raises(ValueError, match=r"^agent\.num_minibatches=3 must divide the 8 "
                                         r"environments each learner device holds per update "
                                         r"\(num_envs / learner devices\)\.$"):
        _check(num_minibatches=3)


def test_sample_minibatches_split_the_steps():
    _check(num_minibatches=5, minibatch_axis="sample")  # 8 envs x 5 steps = 40
    with pytest.raises(ValueError, match=r"agent\.num_minibatches=3 must divide the 40 steps "
                                         r"\(unroll_length x envs\)"):
        _check(num_minibatches=3, minibatch_axis="sample")


def test_recurrent_networks_need_whole_env_columns():
    _check(lstm_size=16, num_minibatches=2)
    with pytest.raises(ValueError, match=r"agent\.minibatch_axis='sample' cannot be used with "
                                         r"network\.lstm_size=16: a recurrent core is re-run "
                                         r"over whole env sequences"):
        _check(lstm_size=16, minibatch_axis="sample", num_minibatches=5)


def test_the_batch_counts_learners_not_threads():
    one_learner = dataclasses.replace(RUNTIME, learner_device_ids=(0,))  # 24 columns
    _check(one_learner.batch_shape(1), num_minibatches=3)
    with pytest.raises(ValueError, match=r"must divide the 24 environments"):
        _check(one_learner.batch_shape(1), num_minibatches=5)
    # The threads carry the same envs: the check sees the same batch whatever their number.
    assert dataclasses.replace(RUNTIME, num_actor_threads=1).batch_shape(1) == BATCH
    assert BatchShape(8, 5, 3, 1, False) == BATCH
