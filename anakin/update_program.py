"""The compiled Anakin update (Podracer, Hessel et al. 2021): acting, JAX-native env steps and
the learner step as ONE program, replicated over the devices with `shard_map`.

Per device and update: the rollout of anakin/actor.py, then the learner step of
anakin/learner.py. `num_envs` is per process, split evenly over its devices, so N devices ==
1 device on the whole batch. With `updates_per_call` K > 1 one call runs up to K updates
(`fused_rounds`). Layout, RNG streams and episode semantics: docs/anakin.md, "Design".
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from anakin.actor import rollout
from anakin.learner import learn
from anakin.topology import AXIS
from podracer.agent import Agent
from podracer.episode_metrics import EpisodeMetric

PyTree = Any


def make_update_fn(agent: Agent, env, mesh: Mesh, unroll_length: int,
                   updates_per_call: int = 1, episode_metrics: Sequence[EpisodeMetric] = (),
                   steps_per_update: int = 0):
    """The compiled Anakin update: a rollout of T steps and a learn step on every device.

    Args:
      agent: the four-function agent.
      env: an anakin.envs env.
      mesh: the devices' 1-D mesh; the learner state is replicated over it, the runner (env
        states and keys) and the finished games split along the env axis.
      unroll_length: T, env steps per update.
      updates_per_call: K; with K > 1 a call runs the first n of K updates (`fused_rounds`:
        one compiled program for every call length 1..K).
      episode_metrics: the env's info fields each finished game reduces on the device.
      steps_per_update: env steps of one update over all processes: the training progress
        an env with a curriculum reads (anakin/actor.py; needed only then).

    Returns:
      Jitted `update(state, runner) -> (state, runner, metrics, episodes)`, or with K > 1
      `update(state, runner, n)`, whose metrics leaves are [K, ...] and finished games
      [K, T, B] (rows from n on are zeros), so the host accounts for each update as if it had
      run alone. State and runner are donated.
    """

    def one_update(carry):
        state, runner = carry
        runner, ro, episodes = rollout(agent, env, agent.actor_params(state), runner,
                                       unroll_length, episode_metrics, steps_per_update)
        state, metrics = learn(agent, state, ro)
        return (state, runner), (metrics, episodes)

    def per_device(state, runner, *n):
        if updates_per_call == 1:
            (state, runner), (metrics, episodes) = one_update((state, runner))
        else:
            (state, runner), (metrics, episodes) = fused_rounds(
                one_update, (state, runner), n[0], updates_per_call)
        return state, runner, metrics, episodes

    # check_vma=False as in sebulba/learner.py: library code inside the losses (rlax's scans)
    # is not written for shard_map's varying-type checks; mean_grad is correct either way.
    episodes_spec = P(None, AXIS) if updates_per_call == 1 else P(None, None, AXIS)
    in_specs = (P(), P(AXIS)) + (() if updates_per_call == 1 else (P(),))
    sharded = jax.shard_map(per_device, mesh=mesh, in_specs=in_specs,
                            out_specs=(P(), P(AXIS), P(), episodes_spec), check_vma=False)
    return with_call_length(jax.jit(sharded, donate_argnums=(0, 1)), updates_per_call)


def fused_rounds(step: Callable, carry: PyTree, n: jax.Array, length: int):
    """Up to `length` rounds of step(carry) -> (carry, out), of which the first `n` (traced)
    run: (carry, outs) with every leaf of `outs` [length, ...], rows from n on zeros. So one
    compiled program serves every call length up to `length`: a run whose remaining updates,
    or whose next checkpoint or evaluation, fall within a call (the loop ends the call there)
    needs no second compilation. `n` is the same on every device (replicated), so all of them
    run the same rounds and the collectives inside `step` stay matched.

    A `fori_loop` with a traced bound (an XLA while loop) writing each round's outputs into
    its row, as `lax.scan` does inside; a `lax.cond` per round of a fixed-length scan ran the
    CartPole update at half the speed on XLA:CPU (each branch its own computation)."""
    _, out_shape = jax.eval_shape(step, carry)
    outs = jax.tree.map(lambda s: jnp.zeros((length, *s.shape), s.dtype), out_shape)
    def body(i, state):
        c, outs = state
        c, out = step(c)
        return c, jax.tree.map(lambda rows, row: rows.at[i].set(row), outs, out)
    return jax.lax.fori_loop(0, n, body, (carry, outs))


def with_call_length(jitted: Callable, updates_per_call: int) -> Callable:
    """`jitted` as update(*args, n=K): the call length as the program's last argument (a host
    int32, not a constant: one compilation for every n); K == 1 takes no n."""
    if updates_per_call == 1:
        return jitted

    def update(*args, n: int = updates_per_call):
        if not 1 <= n <= updates_per_call:
            raise ValueError(f"n={n} updates in a call of at most {updates_per_call}.")
        return jitted(*args, np.int32(n))
    return update
