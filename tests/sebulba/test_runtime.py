"""End-to-end runtime on CartPole: 1 actor device, 2 learner devices, 2 actor threads."""
import jax
import numpy as np

from experiments import impala_atari
from tests.helpers import read_metrics


def test_runtime_end_to_end_two_learners(impala_classic_config, tmp_path):
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1, 2),
                                   num_actor_threads=2, num_envs=8, unroll_length=8,
                                   total_env_steps=64 * 40)
    result = impala_atari.run(config)
    steps_per_update = 8 * 8  # num_envs per process (2 threads x 4) x T
    assert result.updates == 40
    assert result.env_steps == 40 * steps_per_update
    # Learner state is replicated over exactly the two learner devices.
    leaf = jax.tree.leaves(result.learner_state.params)[0]
    assert {d.id for d in leaf.sharding.device_set} == {1, 2}
    m = result.last_metrics
    assert np.isfinite(m["loss/total"]) and m["sps"] > 0
    assert 0 <= m["policy_lag/mean"] <= m["policy_lag/max"] <= 3  # bounded by queue sizes
    assert m["episode/count"] > 0
    lines = read_metrics(tmp_path / "run")
    assert len(lines) == 40 and lines[-1]["step"] == result.env_steps
    for key in ("time/learner_step_s", "time/learner_wait_data_s", "queue/depth",
                "time/actor/params_wait_s", "time/actor/env_s", "optim/grad_norm",
                "optim/learning_rate", "policy/entropy"):
        assert key in lines[-1], key
