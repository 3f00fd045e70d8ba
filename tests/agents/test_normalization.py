"""Running observation statistics and reward scaling against NumPy, on 1 and 4 faked devices.

The statistics must equal NumPy's mean/var over everything seen (masked entries left out),
and be identical on every learner device when the batch is sharded over the learner axis.
Reward scaling must carry each env column's discounted return across rollouts, as a
per-env NumPy loop (gymnasium's NormalizeReward, one env at a time) does.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

from agents import normalization as nl

T, B, D = 7, 8, 3


def _batches(seed, n=3):
    rng = np.random.default_rng(seed)
    return [((5.0 + 3.0 * rng.normal(size=(T, B, D))).astype(np.float32),
             rng.random((T, B)) < 0.8) for _ in range(n)]


@pytest.mark.parametrize("num_devices", [1, 4])
def test_running_stats_equal_numpy_mean_and_var(num_devices):
    batches = _batches(0)
    mesh = Mesh(np.array(jax.devices()[:num_devices]), ("learner",))
    update = jax.jit(jax.shard_map(
        lambda s, x, m: jax.tree.map(lambda v: v[None], s.update(x, m, "learner")),
        mesh=mesh, in_specs=(P(), P(None, "learner"), P(None, "learner")),
        out_specs=P("learner"), check_vma=False))
    stats = nl.RunningStats.zeros((D,))
    seen = []
    for x, mask in batches:
        out = update(stats, x, mask)
        # Every device holds the same statistics.
        for leaf in jax.tree.leaves(out):
            np.testing.assert_allclose(leaf, np.broadcast_to(leaf[0], leaf.shape), rtol=1e-6)
        stats = jax.tree.map(lambda v: v[0], out)
        seen.append(x[mask])
        data = np.concatenate(seen).astype(np.float64)
        assert float(stats.count) == len(data)
        np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-5)
        np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-4)


def test_normalize_obs_and_obs_statistics_skip_the_bootstrap_observation():
    rng = np.random.default_rng(1)
    obs = {"pos": (2.0 + 4.0 * rng.normal(size=(T + 1, B, D))).astype(np.float32),
           "vel": rng.normal(size=(T + 1, B)).astype(np.float32)}
    stats = nl.init_state(jax.tree.map(lambda x: x[0], obs), True, False, 0).obs
    mesh = Mesh(np.array(jax.devices()[:1]), ("learner",))
    stats = jax.shard_map(lambda s, o: nl.update_obs_stats(s, o, "learner"), mesh=mesh,
                          in_specs=(P(), P()), out_specs=P(), check_vma=False)(stats, obs)
    pos = obs["pos"][:-1].reshape(-1, D)
    np.testing.assert_allclose(stats["pos"].mean, pos.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats["vel"].var, obs["vel"][:-1].var(), rtol=1e-4)
    y = nl.normalize_obs(stats, obs, clip=1.5)
    ref = np.clip((obs["pos"] - pos.mean(0)) / np.sqrt(pos.var(0) + 1e-8), -1.5, 1.5)
    np.testing.assert_allclose(y["pos"], ref, rtol=1e-4, atol=1e-5)
    assert np.abs(np.asarray(y["pos"])).max() <= 1.5


def _reward_scaling_reference(rollouts, gamma):
    """gymnasium NormalizeReward semantics, per env column, without the count prior."""
    acc = np.zeros(B)
    seen, out = [], []
    for r, done, valid in rollouts:
        rets = np.zeros((T, B))
        for t in range(T):
            acc = gamma * acc + r[t]
            rets[t] = acc
            acc = np.where(done[t], 0.0, acc)
        seen.append(rets[valid])
        out.append(r / np.sqrt(np.concatenate(seen).var() + 1e-8))
    return out, acc


@pytest.mark.parametrize("num_devices", [1, 4])
def test_reward_scaling_carries_returns_across_rollouts(num_devices):
    rng = np.random.default_rng(2)
    rollouts = []
    for _ in range(3):
        done = rng.random((T, B)) < 0.15
        valid = np.ones((T, B), bool)
        valid[1:] = ~done[:-1]
        r = np.where(valid, rng.normal(1.0, 2.0, (T, B)), 0.0).astype(np.float32)
        rollouts.append((r, done, valid))
    mesh = Mesh(np.array(jax.devices()[:num_devices]), ("learner",))
    step = jax.jit(jax.shard_map(
        lambda s, r, d, v: nl.scale_rewards(s, r, d, v, 0.9, "learner"), mesh=mesh,
        in_specs=(P(), P(None, "learner"), P(None, "learner"), P(None, "learner")),
        out_specs=(P(), P(None, "learner")), check_vma=False))
    state = nl.init_state(np.zeros((1, D), np.float32), False, True, B)
    expected, acc = _reward_scaling_reference(rollouts, 0.9)
    for (r, done, valid), ref in zip(rollouts, expected):
        state, scaled = step(state, r, done, valid)
        np.testing.assert_allclose(scaled, ref, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(state.ret_acc, acc, rtol=1e-5, atol=1e-6)


def test_reward_scaling_needs_the_number_of_env_columns():
    with pytest.raises(ValueError, match="batch_envs"):
        nl.init_state(np.zeros((1, D)), False, True, 0)
    state = nl.init_state(np.zeros((1, D)), False, True, 6)  # built for 6 columns, fed 8
    mesh = Mesh(np.array(jax.devices()[:1]), ("learner",))
    with pytest.raises(ValueError, match="built for 6 env columns"):
        jax.shard_map(lambda s, r: nl.scale_rewards(s, r, r > 0, r > -9, 0.9, "learner"),
                      mesh=mesh, in_specs=(P(), P()), out_specs=(P(), P()),
                      check_vma=False)(state, jnp.zeros((T, B)))
