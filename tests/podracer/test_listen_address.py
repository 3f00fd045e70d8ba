"""Where a job's processes listen: a job whose coordinator address is loopback (every process
on this machine) listens on loopback only; a multi-host job's coordinator binds where told, or
on every interface at its port (jax's default)."""
import ipaddress
import os

import pytest

from podracer import distributed
from podracer.distributed import DistributedConfig
from tests.helpers import ROOT
from tests.multihost import launch_local

PROBE = os.path.join(ROOT, "tests", "podracer", "listen_probe.py")


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


def _listening(output: str, rank: int) -> list[str]:
    prefix = f"[p{rank}] listen "
    return [line[len(prefix):].split()[0] for line in output.splitlines()
            if line.startswith(prefix)]


def _loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


@pytest.mark.slow
def test_a_local_job_listens_on_loopback_only():
    """Two processes joined at 127.0.0.1: every socket either listens on (the coordinator on
    process 0, gloo's on both) is a loopback one; with the coordinator told to bind every
    interface (jax's default), process 0's coordinator listens on `::`, which this check sees."""
    proc = launch_local(PROBE, [], timeout=120, devices_per_process=1)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    p0, p1 = _listening(out, 0), _listening(out, 1)
    assert len(p0) >= 2 and p1, out[-3000:]  # the coordinator and gloo; gloo
    assert all(_loopback(ip) for ip in p0 + p1), (p0, p1)

    proc = launch_local(PROBE, ["--bind=every"], timeout=120, devices_per_process=1)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "::" in _listening(out, 0)
