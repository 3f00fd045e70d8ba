"""Minibatches of env columns, shared by the agents that split an update into several SGD
steps (PPO's epochs, IMPALA's `num_minibatches`).

Each learner device splits its own env columns: column i goes to minibatch i mod M (after an
optional permutation), so N learner devices, each averaging its gradient with the others per
step, take exactly the steps one device would take on the whole batch.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def random_permutation(key: jax.Array, n: int) -> jax.Array:
    """A random permutation of range(n) (int32 [n]) by the method of
    `jax.random.permutation`: rounds of a stable sort by random keys, with at least as many
    random key bits in all (3 log2 n, jax's rule), so it departs from uniform no more than
    jax's.

    Args:
      key: the PRNG key of the draw.
      n: the number of elements (static).

    Returns:
      int32 [n], each of 0..n-1 once.

    Written here because XLA:CPU sorts a key-value pair (jax's `sort_key_val`) through a
    comparator call per comparison, but one uint32 array with a native comparison: each round
    packs the random key into the high bits and the *position* in the current order into the
    low bits of one uint32, sorts that (ties in the key keep their current order, as jax's
    stable sort does) and reorders by the positions it reads back. The rounds then act as the
    digits of one long key (a least-significant-digit radix sort), which is what makes several
    rounds as good as one sort by 3 log2 n random bits. (Packing the element instead of its
    position broke ties by value, so rounds after the first added nothing: at n = 2**16 and
    more, far from uniform.) Timing beside jax's: benchmarks/permutation.py, docs/benchmarks.md.
    Beyond 2**24 elements the keys would be too short: jax's own sort then.
    """
    if n <= 1:
        return jnp.arange(n, dtype=jnp.int32)
    index_bits = (n - 1).bit_length()
    key_bits = 32 - index_bits
    if key_bits < 8:
        return jax.random.permutation(key, n).astype(jnp.int32)
    rounds = math.ceil(3 * math.log2(n) / key_bits)
    positions = jnp.arange(n, dtype=jnp.uint32)
    low = jnp.uint32((1 << index_bits) - 1)
    perm = None
    for round_key in jax.random.split(key, rounds):
        high = jax.random.bits(round_key, (n,), jnp.uint32) >> index_bits << index_bits
        order = (jnp.sort(high | positions) & low).astype(jnp.int32)
        perm = order if perm is None else perm[order]
    return perm


def require_divisible(num_minibatches: int, per_learner: int, what: str = "environments"
                      ) -> None:
    """`num_minibatches` must divide what each learner device splits per update:
    `per_learner` env columns (`what`="environments") or steps."""
    if per_learner % num_minibatches != 0:
        raise ValueError(
            f"agent.num_minibatches={num_minibatches} must divide the "
            f"{per_learner} {what} each learner device holds per update "
            f"(num_envs / learner devices).")
