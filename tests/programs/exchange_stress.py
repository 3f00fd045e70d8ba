"""One process of the host-exchange stress job (started via scripts/launch/local.py by
tests/slow/podracer/test_host_exchange.py).

Runs the pattern both runtimes run every update, many times and as fast as it can: a
data-parallel program with cross-process collectives on the learner device (device 1), waited
for, then a host exchange of fixed-size host data (`--exchange`), then the next program at
once; a thread keeps device 0 busy with local work, as Sebulba's actors do. With an exchange
that returns before its program has finished on every local device, the next program's
collectives meet the exchange's on the same communicator and gloo aborts the job
("Is there a distributed collective mismatch"). Prints "ok <rounds>" at the end.

    --exchange=host|jax   podracer.distributed.allgather_host | jax's process_allgather
    --rounds=N
"""
import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exchange", choices=("host", "jax"), default="host")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--config.distributed.coordinator_address", dest="address")
    parser.add_argument("--config.distributed.num_processes", dest="n", type=int)
    parser.add_argument("--config.distributed.process_id", dest="rank", type=int)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    from podracer import distributed
    distributed.initialize(distributed.DistributedConfig(
        mode="on", coordinator_address=args.address, num_processes=args.n,
        process_id=args.rank))
    from jax.experimental import multihost_utils

    learners = [d for d in jax.devices() if d.id % jax.local_device_count() == 1]
    mesh = Mesh(np.array(learners), ("learner",))

    def per_device(w, x):
        g = jnp.tanh(x @ w)
        w = w - 1e-3 * jax.lax.pmean(g.T @ x, "learner").T
        stats = jax.lax.all_gather(jnp.mean(g, axis=0)[:16], "learner", tiled=True)
        return w, jax.lax.psum(jnp.sum(stats), "learner")

    learn = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P("learner")),
                                  out_specs=(P(), P())))
    w = jax.make_array_from_process_local_data(NamedSharding(mesh, P()),
                                               np.eye(64, dtype=np.float32))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("learner")),
                                               np.ones((32, 64), np.float32))

    stop = threading.Event()
    local0 = jax.local_devices()[0]

    def busy() -> None:  # device 0's own work, as an actor's inference is
        a = jax.device_put(jnp.ones((256, 256)), local0)
        while not stop.is_set():
            a = jnp.tanh(a @ a)
            a.block_until_ready()
    noise = threading.Thread(target=busy, daemon=True)
    noise.start()
    rngs = [np.random.default_rng(rank) for rank in range(args.n)]  # every process's data
    for i in range(args.rounds):
        w, total = learn(w, x)
        total.block_until_ready()
        expected = np.stack([r.normal(size=(256, 3)).astype(np.float32) for r in rngs])
        local = expected[args.rank]
        if args.exchange == "host":
            every = distributed.allgather_host(local)
        else:
            every = np.asarray(multihost_utils.process_allgather(local))
        assert np.array_equal(every, expected), f"round {i}: wrong exchange"
    stop.set()
    noise.join()
    print(f"ok {args.rounds}", flush=True)


if __name__ == "__main__":
    main()
