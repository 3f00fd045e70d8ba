"""What every suite adapter's tests share (tests/anakin/suites/test_<suite>.py): stepping an
adapter's env by hand under `AutoReset`, a few PPO updates of a suite's env under each runtime,
a random policy's mean return (the baseline a learning check must clearly beat)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from anakin import envs
from experiments import train
from experiments.configs import ppo_gymnax
from tests.helpers import quiet_config


def step_through(env: envs.AutoReset, actions, key=0) -> list[envs.Step]:
    """The `Step`s of one env (no batch axis) under `actions`, one jitted step each, from
    `env.reset(key)`; the env's keys are fixed so the suite's own step can be replayed."""
    state = env.reset(jax.random.key(key))
    step = jax.jit(env.step)
    out = []
    for i, action in enumerate(actions):
        state, s = step(jax.random.key(1000 + i), state, action)
        out.append(jax.device_get(s))
    return out


def few_updates(tmp_path, env_name: str, runtime: str, *, updates: int = 2, num_envs: int = 4,
                unroll_length: int = 8, **overrides):
    """`updates` PPO updates (experiments/configs/ppo_gymnax.py, the shared MLP unless
    overridden) of `env_name` under `runtime` ("anakin" | "sebulba"); returns the TrainResult."""
    config = quiet_config(
        ppo_gymnax.get_config(), tmp_path / f"run_{runtime}", runtime=runtime,
        num_envs=num_envs, unroll_length=unroll_length,
        total_env_steps=num_envs * unroll_length * updates, checkpoint_keep=0,
        **{"env.name": env_name, "agent.num_minibatches": 2, "agent.num_epochs": 1},
        **overrides)
    result = train.run(config)
    assert result.updates == updates, result
    return result




def random_return(env: envs.AutoReset, *, num_envs: int = 64, steps: int = 1000,
                  seed: int = 0) -> float:
    """The mean return of the episodes a uniformly random policy finishes in `steps` steps of
    `num_envs` envs (actions uniform over `env.action_space`: `envs.uniform_actions`)."""

    @jax.jit
    def run(key):
        keys = jax.random.split(key, num_envs)
        state = jax.vmap(env.reset)(keys)

        def body(carry, key):
            state, ret, total, count = carry
            k_act, k_env = jax.random.split(key)
            action = envs.uniform_actions(env.action_space, k_act, num_envs)
            state, s = jax.vmap(env.step)(jax.random.split(k_env, num_envs), state, action)
            ret = ret + s.reward
            over = s.episode_over
            total = total + jnp.sum(jnp.where(over, ret, 0.0))
            count = count + jnp.sum(over)
            return (state, jnp.where(over, 0.0, ret), total, count), None

        init = (state, jnp.zeros(num_envs), jnp.zeros(()), jnp.zeros((), jnp.int32))
        (_, _, total, count), _ = jax.lax.scan(body, init, jax.random.split(key, steps))
        return total, count

    total, count = jax.device_get(run(jax.random.key(seed)))
    if count == 0:
        raise AssertionError(f"no episode ended in {steps} random steps of {num_envs} envs")
    return float(total) / float(count)


def assert_step_keeps_state_types(env: envs.AutoReset, action) -> None:
    """Shapes, dtypes and weak types of the state after a step equal the reset's (traced
    only): any change makes the runtime compile its update a second time (a suite's
    Python-scalar constants are weakly typed; the adapters make them strong)."""
    key = jax.random.key(0)
    state = jax.eval_shape(env.reset, key)
    after, _ = jax.eval_shape(env.step, key, state, action)

    def types(tree):
        return [(x.shape, x.dtype, x.weak_type) for x in jax.tree.leaves(tree)]
    assert jax.tree.structure(after) == jax.tree.structure(state)
    assert types(after) == types(state)
    assert not any(weak for *_, weak in types(state))


def ppo_best_return(tmp_path, env_name: str, **overrides) -> float:
    """PPO (experiments/configs/ppo_gymnax.py with `overrides`, e.g. stop_at_return and
    total_env_steps) on `env_name`: the best 100-game mean it reached (printed with the steps
    and the wall time), for a suite's learning check."""
    import time
    config = quiet_config(ppo_gymnax.get_config(), tmp_path / "run", checkpoint_keep=0,
                          **{"env.name": env_name}, **overrides)
    start = time.perf_counter()
    result = train.run(config)
    best = result.episode_summary["episode/return_best_mean"]
    print(f"PPO {env_name}: best 100-game mean {best:.3f} after {result.env_steps:,d} steps "
          f"in {time.perf_counter() - start:.1f}s wall")
    return best
