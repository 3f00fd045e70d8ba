"""One process of the listening-address probe (started via scripts/launch/local.py by
tests/slow/podracer/test_listen_address.py): joins the job through podracer.distributed, exchanges
once (so gloo has connected its peers), then prints "listen <address> <port>" for every TCP
socket this process listens on, and "done".

    --bind=ADDRESS   distributed.coordinator_bind_address ("" = the default; "every" = every
                     interface at the coordinator's port, jax's own default)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bind", default="")
    parser.add_argument("--config.distributed.coordinator_address", dest="address")
    parser.add_argument("--config.distributed.num_processes", dest="n", type=int)
    parser.add_argument("--config.distributed.process_id", dest="rank", type=int)
    args = parser.parse_args()

    import numpy as np
    import psutil

    from podracer import distributed
    if args.bind == "every":
        args.bind = "[::]:" + args.address.rpartition(":")[2]
    distributed.initialize(distributed.DistributedConfig(
        mode="on", coordinator_address=args.address, num_processes=args.n,
        process_id=args.rank, coordinator_bind_address=args.bind))
    assert distributed.allgather_host(np.int32(args.rank)).tolist() == list(range(args.n))
    for conn in psutil.Process().net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN:
            print(f"listen {conn.laddr.ip} {conn.laddr.port}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
