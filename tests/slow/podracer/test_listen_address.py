"""Where a local job's processes listen, seen from two real processes joined at loopback."""
import ipaddress
import os

from tests.helpers import ROOT
from tests.multihost import launch_local


PROBE = os.path.join(ROOT, "tests", "programs", "listen_probe.py")


def _listening(output: str, rank: int) -> list[str]:
    prefix = f"[p{rank}] listen "
    return [line[len(prefix):].split()[0] for line in output.splitlines()
            if line.startswith(prefix)]


def _loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


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
