"""The multi-process test harness both runtimes share (tests/slow/{sebulba,anakin}/test_multihost.py
and their drivers tests/programs/{sebulba,anakin}_multihost.py).

Driver side: `param_checksums`, the on_update hook that fingerprints this process's copy of the
parameters after every update, so that a test can compare processes bit for bit.
Test side: `launch_local` runs a driver as a local multi-host job (scripts/launch/local.py);
`kill_peer_mid_run` starts two processes itself, kills process 1 once process 0 has trained a
little, and checks process 0's exit.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys

from tests.helpers import ROOT


def config_path(name: str) -> str:
    """experiments/configs/<name>: a driver's default config."""
    return os.path.join(ROOT, "experiments", "configs", name)


@contextlib.contextmanager
def param_checksums(config):
    """Yields an on_update hook that writes "<update> <global env steps> <sha256 of this
    process's replica of the parameters>" to <run_dir>/checksums-p<rank>.txt, a line per
    update (line-buffered: what a killed process wrote is kept)."""
    import jax
    import numpy as np

    from sebulba.topology import local_replica
    os.makedirs(config.run_dir, exist_ok=True)
    path = os.path.join(config.run_dir, f"checksums-p{config.distributed.process_id}.txt")
    with open(path, "w", buffering=1) as out:
        def on_update(update, env_steps, state):
            h = hashlib.sha256()
            for leaf in jax.tree.leaves(local_replica(state.params)):
                h.update(np.asarray(leaf).tobytes())
            out.write(f"{update} {env_steps} {h.hexdigest()}\n")
        yield on_update


def read_lines(run_dir, name: str) -> list[str]:
    """The lines of <run_dir>/<name>."""
    with open(os.path.join(run_dir, name)) as f:
        return f.read().splitlines()


def launch_local(driver: str, args: list[str], *, timeout: float, env: dict | None = None,
                 num_processes: int = 2, devices_per_process: int = 2):
    """Runs `driver args` as a local multi-host job; returns the CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, "-m", "scripts.launch.local", "--num_processes", str(num_processes),
         "--devices_per_process", str(devices_per_process), "--", driver, *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def process_tails(output: str, lines: int = 60) -> str:
    """The last `lines` lines of each process in launch_local's output (prefixed `[pN] `), so
    a failure shows how every process ended, not only the one that printed last."""
    by_rank: dict[str, list[str]] = {}
    for line in output.splitlines():
        rank = line[1:line.index("]")] if line.startswith("[p") and "]" in line else "launcher"
        by_rank.setdefault(rank, []).append(line)
    return "\n".join("\n".join(tail[-lines:]) for tail in by_rank.values())


def kill_peer_mid_run(driver: str, args: list[str], run_dir, port: int) -> tuple[str, str]:
    """Starts 2 processes of `driver args` (2 fake CPU devices each, joined at
    127.0.0.1:`port`; an endless run into `run_dir` with a checkpoint every 3 updates),
    SIGKILLs process 1 once process 0 has logged 4 updates, and checks that process 0 then
    exits within 90 s with status 1 (not an abort), no traceback and exactly one
    "ERROR: lost process 1 of 2..." line. Returns (process 0's output, that line)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    procs = [subprocess.Popen(
        [sys.executable, driver, *args, "--config.total_env_steps=100000000",
         f"--config.run_dir={run_dir}", "--config.console_every_s=0",
         "--config.checkpoint_every_updates=3",
         f"--config.distributed.coordinator_address=127.0.0.1:{port}",
         "--config.distributed.num_processes=2", f"--config.distributed.process_id={i}",
         # Generous: the dead peer is reported by the failing collective within seconds; the
         # heartbeat is the backstop, and a short one can time out a live peer on a busy host.
         "--config.distributed.heartbeat_timeout_s=30"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)]
    try:
        updates, before = 0, []
        for line in procs[0].stdout:  # wait until a few updates (and a checkpoint) are done
            before.append(line)
            if "steps " in line and "sps" in line and " 0/" not in line:
                updates += 1
                if updates == 4:
                    break
        if updates < 4:  # process 0 ended on its own: show how both processes ended
            procs[1].kill()
            raise AssertionError(
                f"process 0 ended (status {procs[0].wait()}) after {updates} updates:\n"
                + "".join(before[-60:]) + "\nprocess 1:\n" + procs[1].communicate()[0][-6000:])
        procs[1].send_signal(signal.SIGKILL)
        out, _ = procs[0].communicate(timeout=90)
        assert procs[0].returncode == 1, out  # not -6 (SIGABRT)
        assert "Traceback" not in out and "Check failure" not in out, out
        errors = [line for line in out.splitlines() if line.startswith("ERROR: lost ")]
        assert len(errors) == 1 and errors[0].startswith("ERROR: lost process 1 of 2"), out
        return out, errors[0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
