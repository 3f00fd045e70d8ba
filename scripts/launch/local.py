"""Starts N local processes of one experiment as a multi-host job on this machine.

The way to try multi-host without a cluster: every process is a "host" with its own fake CPU
devices, and the learners of all processes form one data-parallel update over gloo.

    python -m scripts.launch.local --num_processes 2 --devices_per_process 2 -- \\
        experiments/impala_atari.py --config=experiments/configs/impala_classic.py \\
        --config.actor_device_ids='(0,)' --config.learner_device_ids='(1,)'

Each process gets `--config.distributed.{coordinator_address,num_processes,process_id}`
appended. Output lines are prefixed with the process id. If any process fails, the others are
terminated and the launcher exits with that process's status.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pump(proc: subprocess.Popen, prefix: str) -> None:
    for line in proc.stdout:
        sys.stdout.write(f"{prefix}{line}")
        sys.stdout.flush()


def launch(num_processes: int, command: list[str], devices_per_process: int | None,
           port: int | None = None, cpu: bool = True) -> int:
    """Runs `python command... + distributed flags` N times; returns the job's exit status."""
    if num_processes < 1:
        raise ValueError(f"num_processes={num_processes} must be >= 1.")
    address = f"127.0.0.1:{port or _free_port()}"
    procs = []
    for i in range(num_processes):
        env = dict(os.environ)
        if cpu:
            env["JAX_PLATFORMS"] = "cpu"
        if devices_per_process:
            env["XLA_FLAGS"] = (f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_"
                                f"device_count={devices_per_process}").strip()
        args = [sys.executable, *command,
                f"--config.distributed.coordinator_address={address}",
                f"--config.distributed.num_processes={num_processes}",
                f"--config.distributed.process_id={i}"]
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=_pump, args=(proc, f"[p{i}] "), daemon=True).start()
        procs.append(proc)
    status = 0
    try:
        while any(p.poll() is None for p in procs):
            failed = [p for p in procs if p.poll() not in (None, 0)]
            if failed:
                status = failed[0].returncode
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        status = 130
    finally:
        for p in procs:  # a failed or interrupted job takes every process down
            if p.poll() is None and status != 0:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return status or next((p.returncode for p in procs if p.returncode), 0)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.launch.local",
        description=__doc__.splitlines()[0])
    parser.add_argument("--num_processes", type=int, default=2)
    parser.add_argument("--devices_per_process", type=int, default=2,
                        help="fake CPU devices per process (0 = leave XLA_FLAGS alone)")
    parser.add_argument("--port", type=int, default=0, help="coordinator port (0 = free)")
    parser.add_argument("--gpu", action="store_true", help="do not force JAX_PLATFORMS=cpu")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- script.py and its flags")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the experiment after --, e.g. -- experiments/impala_atari.py ...")
    sys.exit(launch(args.num_processes, command, args.devices_per_process or None,
                    args.port or None, cpu=not args.gpu))


if __name__ == "__main__":
    main()
