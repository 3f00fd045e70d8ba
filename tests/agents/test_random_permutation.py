"""agents.minibatches.random_permutation: a permutation, drawn uniformly, as jax's is.

It replaces `jax.random.permutation` in PPO's minibatch split for speed on XLA:CPU (packed
single-array sorts), so what matters is that it draws the same distribution: every
permutation of a small n equally often, and every element equally often in every place for
sizes that need one round of keys and several, and no order left at GPU-sized n (2**16, 2**20).
"""
from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

from agents.minibatches import random_permutation


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 512, 8192, 70_000])
def test_is_a_permutation(n):
    perm = np.asarray(jax.jit(random_permutation, static_argnums=1)(jax.random.key(n), n))
    assert perm.dtype == np.int32 and perm.shape == (n,)
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))


def _draws(n, count, seed=0):
    keys = jax.random.split(jax.random.key(seed), count)
    return np.asarray(jax.jit(jax.vmap(lambda k: random_permutation(k, n)))(keys))


def _chi2_ok(counts, expected):
    """Pearson's statistic under 5 standard deviations above its mean (dof = cells - 1)."""
    dof = counts.size - 1
    stat = float(np.sum((counts - expected) ** 2 / expected))
    return stat < dof + 5 * math.sqrt(2 * dof), stat


def test_every_permutation_of_four_equally_often():
    draws = _draws(4, 24_000)
    index = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.bincount([index[tuple(p)] for p in draws], minlength=24).astype(float)
    ok, stat = _chi2_ok(counts, 1000.0)
    assert ok, (stat, counts)


@pytest.mark.parametrize("n", [64, 4096])  # one round of keys, and two (random_permutation)
def test_every_element_equally_often_in_every_place(n):
    draws = _draws(n, 3200 if n == 64 else 320)
    # Where element 0, the middle and the last land: uniform over the n places.
    for element in (0, n // 2, n - 1):
        places = np.argmax(draws == element, axis=1)
        bins = np.bincount(places * 16 // n, minlength=16).astype(float)
        ok, stat = _chi2_ok(bins, len(draws) / 16)
        assert ok, (n, element, stat, bins)
    # And neighbours stay in their order half the time (no tie order showing through).
    before = np.mean(np.argmax(draws == 0, axis=1) < np.argmax(draws == 1, axis=1))
    assert abs(before - 0.5) < 5 * 0.5 / math.sqrt(len(draws))


@pytest.mark.parametrize("n", [2**16, 2**20])  # 3 and 5 rounds of keys: GPU-sized batches
def test_large_permutations_show_no_order(n):
    """At sizes where each round's key is shorter than log2 n bits (ties in every round), the
    rounds together must still shuffle: under a uniform permutation the ascents (p[i+1] >
    p[i]) number (n-1)/2 with variance (n+1)/12, the correlation of place and element times
    sqrt(n-1) is a standard normal, and the successions (p[i+1] == p[i] + 1) are Poisson(1).
    Each check's chance of failing a uniform permutation: |z| >= 5, 5.7e-7; 12 or more
    successions, 9e-10. Ties broken by element value (the defect this guards against) gave
    ascent shares of 0.58 at 2**16 and 0.996 at 2**20."""
    perm = np.asarray(jax.jit(random_permutation, static_argnums=1)(jax.random.key(7), n))
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))
    ascents = np.sum(np.diff(perm) > 0)
    z_ascents = (ascents - (n - 1) / 2) / math.sqrt((n + 1) / 12)
    z_corr = np.corrcoef(np.arange(n), perm)[0, 1] * math.sqrt(n - 1)
    successions = int(np.sum(np.diff(perm) == 1))
    assert abs(z_ascents) < 5, (ascents / (n - 1), z_ascents)
    assert abs(z_corr) < 5, z_corr
    assert successions < 12, successions
