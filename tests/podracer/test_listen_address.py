"""Where a job's processes listen: a job whose coordinator address is loopback (every process
on this machine) listens on loopback only; a multi-host job's coordinator binds where told, or
on every interface at its port (jax's default)."""

import pytest

from podracer import distributed
from podracer.distributed import DistributedConfig


def _config(address: str, bind: str = "") -> DistributedConfig:
    return DistributedConfig(mode="on", coordinator_address=address, num_processes=2,
                             coordinator_bind_address=bind)


@pytest.mark.parametrize("address", ["127.0.0.1:1234", "localhost:1234", "[::1]:1234"])
def test_a_local_job_binds_its_coordinator_to_its_own_loopback_address(address):
    assert distributed.bind_address(_config(address)) == address


def test_a_multi_host_job_binds_where_told_or_on_every_interface():
    assert distributed.bind_address(_config("10.1.2.3:1234")) == ""  # jax's [::]:1234
    assert distributed.bind_address(_config("10.1.2.3:1234", "10.1.2.3:1234")) == "10.1.2.3:1234"
    assert distributed.bind_address(_config("127.0.0.1:1", "0.0.0.0:1")) == "0.0.0.0:1"


def test_a_bind_address_without_a_port_is_refused():
    with pytest.raises(ValueError, match=r"coordinator_bind_address='10.1.2.3' must be host:port"):
        _config("10.1.2.3:1234", "10.1.2.3")
