"""Shared test helpers: configs for quick CartPole runs and synthetic rollouts."""
from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from sebulba.agent import Rollout


def classic_config(tmp_path, **overrides):
    """The IMPALA CartPole config with a temporary run dir and quiet console."""
    from experiments.configs import impala_classic
    config = impala_classic.get_config()
    config.run_dir = str(tmp_path / "run")
    config.console_every_s = 1e9
    for key, value in overrides.items():
        target = config
        *path, leaf = key.split(".")
        for p in path:
            target = target[p]
        target[leaf] = value
    return config


def random_rollout(rng: np.random.Generator, T: int, B: int, obs_dim: int, num_actions: int,
                   done_prob: float = 0.1) -> Rollout:
    """A rollout with random data, episode ends and reset steps, for learner tests."""
    terminated = rng.random((T, B)) < done_prob
    truncated = (rng.random((T, B)) < done_prob) & ~terminated
    done = terminated | truncated
    valid = np.ones((T, B), bool)
    valid[1:] = ~done[:-1]
    return Rollout(
        obs=jnp.asarray(rng.normal(size=(T + 1, B, obs_dim)), jnp.float32),
        action=jnp.asarray(rng.integers(0, num_actions, (T, B)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(T, B)), jnp.float32),
        terminated=jnp.asarray(terminated), truncated=jnp.asarray(truncated),
        valid=jnp.asarray(valid),
        # The behaviour log-prob of a random policy, as agents/policy.make_actor_step keeps it.
        extras={"logp": jnp.asarray(np.log(rng.uniform(0.05, 1.0, (T, B))), jnp.float32)})
