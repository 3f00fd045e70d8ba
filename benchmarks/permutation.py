"""The minibatch permutation: microseconds per draw of `agents.minibatches.random_permutation`
beside `jax.random.permutation` (and any other implementation named), inside a `lax.scan` as
PPO's epochs draw it, compiled once, on this process's default device.

    python -m benchmarks.permutation [--sizes 64,512,8192,65536] [--rounds 5] [--draws 64]
        [--impl jax] [--impl agents.minibatches:random_permutation] [--impl /tmp/old.py:fn]

`--impl` names an implementation: `jax` (jax.random.permutation), `module:function` or
`path.py:function` (e.g. an older copy of agents/minibatches.py, to time a change beside its
predecessor in one process). Each round times every implementation once per size, in turn, so
load drifts hit all alike; a round is `--draws` permutations in one compiled scan. Printed:
per size and implementation the median microseconds per draw over the rounds, each round's
figure, and each implementation's ratio to the first one named, round by round (median).
The timing is the benchmark's; the uniformity is tests/agents/test_random_permutation.py's.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import time
from typing import Callable

DEFAULT_IMPLS = ("jax", "agents.minibatches:random_permutation")


def load(name: str) -> Callable:
    """The permutation function an `--impl` names: fn(key, n) -> int [n]."""
    import jax
    if name == "jax":
        return jax.random.permutation
    where, sep, function = name.rpartition(":")
    if not sep or not where or not function:
        raise ValueError(f"--impl {name!r}: expected 'jax', 'module:function' or "
                         f"'path.py:function'.")
    if where.endswith(".py"):
        if not os.path.isfile(where):
            raise ValueError(f"--impl {name!r}: no file {where!r}.")
        spec = importlib.util.spec_from_file_location(f"_permutation_{abs(hash(where))}", where)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    if not hasattr(module, function):
        raise ValueError(f"--impl {name!r}: {where} has no {function!r}.")
    return getattr(module, function)


def compiled(fn: Callable, n: int, draws: int) -> Callable:
    """A jitted scan of `draws` permutations of n (each from its own key); returns a scalar
    that depends on every draw, so none is optimised away."""
    import jax
    import jax.numpy as jnp

    def run(key):
        def body(total, k):
            return total + fn(k, n)[0].astype(jnp.int32), None
        total, _ = jax.lax.scan(body, jnp.int32(0), jax.random.split(key, draws))
        return total
    return jax.jit(run)


def measure(impls: dict[str, Callable], sizes: list[int], rounds: int, draws: int) -> dict:
    import jax
    programs = {(name, n): compiled(fn, n, draws) for name, fn in impls.items() for n in sizes}
    for program in programs.values():  # compile and warm up outside the timed rounds
        jax.block_until_ready(program(jax.random.key(0)))
    times: dict = {key: [] for key in programs}
    for r in range(rounds):
        for key, program in programs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(program(jax.random.key(r + 1)))
            times[key].append((time.perf_counter() - t0) / draws * 1e6)
    first = next(iter(impls))
    out = {}
    for n in sizes:
        for name in impls:
            us = times[(name, n)]
            ratios = [a / b for a, b in zip(us, times[(first, n)])]
            out[f"{name} n={n}"] = {"us_median": round(statistics.median(us), 2),
                                    "us_rounds": [round(u, 2) for u in us],
                                    f"ratio_to_{first}_median": round(statistics.median(ratios),
                                                                      3)}
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="64,512,8192,65536")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--draws", type=int, default=64)
    parser.add_argument("--impl", action="append", default=None,
                        help="jax | module:function | path.py:function (repeatable)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes or min(sizes) < 2:
        parser.error(f"--sizes {args.sizes!r}: sizes of at least 2, comma-separated.")
    if args.rounds < 1 or args.draws < 1:
        parser.error(f"--rounds {args.rounds} and --draws {args.draws} must be >= 1.")
    names = args.impl or list(DEFAULT_IMPLS)
    try:
        impls = {name: load(name) for name in names}
    except ValueError as e:
        parser.error(str(e))
    result = measure(impls, sizes, args.rounds, args.draws)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
