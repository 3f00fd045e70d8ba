"""Topology validation: every bad layout fails early with a message naming the value."""
import jax
import pytest

from sebulba.topology import make_topology


def test_valid_topology_shares_devices():
    topo = make_topology([0], [1, 2], num_envs_per_thread=4)
    assert topo.actor_devices == (jax.local_devices()[0],)
    assert topo.num_learners == 2
    assert tuple(topo.batch_sharded().spec) == (None, "learner")


@pytest.mark.parametrize("actors, learners, envs, match", [
    ([7], [0], 4, r"actor_device_ids contains 7.*allowed ids are 0\.\.3"),
    ([0], [-1], 4, r"learner_device_ids contains -1"),
    ([], [0], 4, r"actor_device_ids is empty"),
    ([0], [1, 1], 4, r"repeats a device id"),
    ([0], [0, 1, 2], 4, r"num_envs=4 .* divisible by the number of learner devices \(3"),
])
def test_bad_topology_raises(actors, learners, envs, match):
    with pytest.raises(ValueError, match=match):
        make_topology(actors, learners, envs)
