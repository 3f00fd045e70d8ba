"""The Anakin runtime (Podracer, Hessel et al. 2021): acting, JAX-native env steps and the
learner update as ONE compiled program, replicated over the devices with `shard_map`.

Per device and update: `lax.scan` over T steps of the agent's `actor_step` and the env's step
(each env with its own key stream), building the same `Rollout` the Sebulba actors build, then
the agent's `learn_step` behind the core's non-finite guard (`podracer.finite`). `num_envs` is
per process, split evenly over its devices, so N devices == 1 device on the whole batch.
Layout, RNG streams and episode semantics: docs/anakin.md, "Design".
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from anakin import episode_metrics as game_metrics
from podracer import placement
from podracer.agent import Agent, Rollout, reset_core_state
from podracer.batch import BatchShape, UpdatePlan
from podracer.compile_cache import DEFAULT_DIR
from podracer.episode_metrics import EpisodeMetric
from podracer.finite import keep_finite
from podracer.legal import count_no_legal
from podracer.schema import check_types

AXIS = "devices"
PyTree = Any


@dataclasses.dataclass(frozen=True)
class AnakinConfig:
    """How the Anakin runtime lays out and paces the work (algorithm-independent): its section
    of an experiment config, the top-level fields it reads (the Sebulba-only ones, such as
    `actor_device_ids` or `queue_size`, do not apply). Checked on construction."""

    seed: int = 0                       # base seed: params init, env and action key streams
    learner_device_ids: tuple[int, ...] = (0,)  # local devices; each acts, steps envs, learns
    num_envs: int = 64                  # environments per process, split over the devices
    unroll_length: int = 128            # T, steps per rollout
    total_env_steps: int = 1_000_000    # agent steps over all processes
    stop_at_return: float | None = None  # stop once the 100-game mean return reaches it
    max_nonfinite_updates: int = 10     # stop after this many non-finite updates in a row
    updates_per_call: int = 16          # K: at most this many updates per compiled call (one
                                        # program for every length 1..K); each is still
                                        # logged, counted and checkpointed as its own
    call_target_s: float = 0.25         # with K > 1: each call runs as many updates (1..K) as
                                        # fit in about this many seconds, from the last call's
                                        # time per update (short updates: K, amortising the
                                        # host's per-call work; long ones: 1, so a signal or a
                                        # metrics row waits one update); 0: always K
    compilation_cache_dir: str = DEFAULT_DIR  # JAX's persistent compilation cache; "" = off
    num_seeds: int = 1                  # agents trained side by side in one program, seeds
                                        # seed .. seed + num_seeds - 1 (anakin/population.py)
    vary: str = ""                      # agent fields to cross with the seeds, in the same
                                        # program: "agent.learning_rate=[1e-4,3e-4];..."

    def __post_init__(self) -> None:
        check_types(AnakinConfig, dataclasses.asdict(self))
        ids = tuple(self.learner_device_ids)
        object.__setattr__(self, "learner_device_ids", ids)
        for name in ("num_envs", "unroll_length", "total_env_steps", "max_nonfinite_updates",
                     "updates_per_call", "num_seeds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a positive integer.")
        if not ids or len(set(ids)) != len(ids):
            raise ValueError(f"learner_device_ids={list(ids)} must list at least one local "
                             f"device id, each once.")
        if self.num_envs % len(ids):
            raise ValueError(f"num_envs={self.num_envs} (per process) must be divisible by the "
                             f"number of devices ({len(ids)}, learner_device_ids={list(ids)}): "
                             f"the envs are split evenly over the devices.")
        if not (math.isfinite(self.call_target_s) and self.call_target_s >= 0):
            raise ValueError(f"call_target_s={self.call_target_s!r} must be a finite number of "
                             f"seconds >= 0 (0: every call runs updates_per_call updates).")
        if not 0 <= self.seed < 2**31:
            raise ValueError(f"seed={self.seed} must be in [0, 2**31).")
        if self.stop_at_return is not None and not math.isfinite(self.stop_at_return):
            raise ValueError(f"stop_at_return={self.stop_at_return} must be finite or None.")

    @property
    def device_ids(self) -> tuple[int, ...]:
        return self.learner_device_ids

    def batch_shape(self, processes: int) -> BatchShape:
        """The batch an agent is built for: on-policy by nature (the policy that acts is the
        one being updated)."""
        return BatchShape(envs_per_learner=self.num_envs // len(self.learner_device_ids),
                          unroll_length=self.unroll_length,
                          learner_devices=len(self.learner_device_ids), processes=processes,
                          on_policy=True)

    def plan(self, processes: int) -> UpdatePlan:
        return self.batch_shape(processes).plan(self.total_env_steps)


class Runner(NamedTuple):
    """The acting side's carry; every leaf has the env axis first (split over devices)."""

    env: PyTree          # anakin.envs.EnvState per env
    key: jax.Array       # per-env RNG key
    core: PyTree         # recurrent agents: core state per env (None otherwise)
    reset: jax.Array     # [B] the next step sees a new episode's first observation
    ep_return: jax.Array  # [B] true return of the running episode
    ep_length: jax.Array  # [B] valid steps of the running episode
    ep_metrics: game_metrics.Totals  # [B, M] env.episode_metrics of the running episode


class Episodes(NamedTuple):
    """Per step [T, B]: whether a game ended there, and its return, length and episode
    metrics ([T, B, M], env.episode_metrics) if so."""

    over: jax.Array
    ret: jax.Array
    length: jax.Array
    metrics: jax.Array | None = None  # None: no metrics (a record made by hand)


def make_mesh(device_ids, processes: bool = True) -> Mesh:
    """1-D mesh over `device_ids` of every process (process-major), as sebulba/topology.py."""
    local = jax.local_devices()
    for i in device_ids:
        if not isinstance(i, (int, np.integer)) or not 0 <= i < len(local):
            raise ValueError(f"device_ids contains {i!r}, but this host has {len(local)} local "
                             f"device(s): allowed ids are 0..{len(local) - 1}.")
    if not processes or jax.process_count() == 1:
        return Mesh(np.array([local[i] for i in device_ids]), (AXIS,))
    devs = [jax.local_devices(process_index=p)[i]
            for p in range(jax.process_count()) for i in device_ids]
    return Mesh(np.array(devs), (AXIS,))


def init_runner(agent: Agent, env, key: jax.Array, num_envs: int, num_metrics: int = 0
                ) -> Runner:
    """`num_envs` fresh envs, each with its own key stream derived from `key`, with room for
    `num_metrics` episode metrics."""
    keys = jax.random.split(key, num_envs)
    split = jax.vmap(lambda k: jax.random.split(k))(keys)  # [B, 2]: reset key, stream key
    env_state = jax.vmap(env.reset)(split[:, 0])
    core = agent.initial_core_state(num_envs) if agent.recurrent else None
    zeros = jnp.zeros(num_envs, jnp.float32)
    return Runner(env_state, split[:, 1], core, jnp.ones(num_envs, bool), zeros,
                  jnp.zeros(num_envs, jnp.int32), game_metrics.zeros(num_metrics, (num_envs,)))


def _act_one(agent: Agent, params, obs, key, core):
    """The agent's batched actor_step on a batch of one env (vmapped over envs)."""
    obs1 = jax.tree.map(lambda x: x[None], obs)
    if core is None:
        action, extras = agent.actor_step(params, obs1, key)
        new_core = None
    else:
        action, extras, new_core = agent.actor_step(
            params, obs1, key, jax.tree.map(lambda x: x[None], core))
        new_core = jax.tree.map(lambda x: x[0], new_core)
    first = lambda t: jax.tree.map(lambda x: x[0], t)  # noqa: E731
    return first(action), first(extras), new_core


def rollout(agent: Agent, env, actor_params, runner: Runner, T: int,
            metrics: Sequence[EpisodeMetric] = ()) -> tuple[Runner, Rollout, Episodes]:
    """T steps of every env in `runner` (one device's share): the next carry, the Rollout the
    Sebulba actors would have built, and the finished games with their `metrics` (reduced
    here, on the device: anakin/episode_metrics.py; `runner` made for as many)."""
    initial = agent.initial_core_state(1) if agent.recurrent else None
    initial = jax.tree.map(lambda x: x[0], initial) if initial is not None else None

    def one_env(env_state, key, core, reset, ep_ret, ep_len, totals):
        key, k_act, k_env = jax.random.split(key, 3)
        if core is not None:
            core = reset_core_state(jax.tree.map(lambda x: x[None], core), reset[None],
                                    jax.tree.map(lambda x: x[None], initial))
            core = jax.tree.map(lambda x: x[0], core)
        action, extras, new_core = _act_one(agent, actor_params, env_state.obs, k_act, core)
        new_env, step = env.step(k_env, env_state, action)
        ep_ret = ep_ret + step.reward
        ep_len = ep_len + step.valid.astype(jnp.int32)
        totals = game_metrics.add(totals, game_metrics.values(step.info, metrics), step.valid,
                                  metrics)
        over = step.episode_over
        # The step goes out without its info (the T steps would otherwise keep every field).
        out = (env_state.obs, action, extras, step._replace(info=None),
               Episodes(over, ep_ret, ep_len, game_metrics.result(totals, metrics)))
        carry = (new_env, key, new_core, ~step.valid, jnp.where(over, 0.0, ep_ret),
                 jnp.where(over, 0, ep_len), game_metrics.restart(totals, over))
        return carry, out

    def body(r: Runner, _):
        carry, out = jax.vmap(one_env)(*r)
        return Runner(*carry), out

    core_state = None
    if runner.core is not None:  # the state step 0 acts from (after its resets): [1, B, ...]
        core_state = reset_core_state(runner.core, runner.reset,
                                      agent.initial_core_state(runner.reset.shape[0]))
        core_state = jax.tree.map(lambda x: x[None], core_state)
    runner, (obs, action, extras, step, episodes) = jax.lax.scan(
        body, runner, None, length=T)
    last_obs = jax.tree.map(lambda x: x[None], runner.env.obs)
    ro = Rollout(obs=jax.tree.map(lambda a, b: jnp.concatenate([a, b]), obs, last_obs),
                 action=action, reward=step.reward, terminated=step.terminated,
                 truncated=step.truncated, valid=step.valid, extras=extras,
                 core_state=core_state)
    return runner, ro, episodes


def learn(agent: Agent, state, ro: Rollout, axis_name: str = AXIS):
    """The learner part, per device, as the Sebulba learner runs it (sebulba/learner.py):
    the agent's learn_step, then the non-finite guard and the count of actions taken on a
    mask that allowed none (podracer/legal.py)."""
    new_state, metrics = agent.learn_step(state, ro, axis_name)
    state, metrics = keep_finite(state, new_state, metrics, axis_name)
    return state, count_no_legal(ro, metrics, axis_name)


def make_learn_fn(agent: Agent, mesh: Mesh):
    """Jitted learn(state, rollout) -> (state, metrics) over `mesh` (rollout split along its
    env axis): Anakin's learner part alone, for tests against Sebulba's."""
    sharded = jax.shard_map(lambda s, r: learn(agent, s, r), mesh=mesh,
                            in_specs=(P(), P(None, AXIS)), out_specs=(P(), P()),
                            check_vma=False)
    return jax.jit(sharded)


def make_update_fn(agent: Agent, env, mesh: Mesh, unroll_length: int,
                   updates_per_call: int = 1, episode_metrics: Sequence[EpisodeMetric] = ()):
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

    Returns:
      Jitted `update(state, runner) -> (state, runner, metrics, episodes)`, or with K > 1
      `update(state, runner, n)`, whose metrics leaves are [K, ...] and finished games
      [K, T, B] (rows from n on are zeros), so the host accounts for each update as if it had
      run alone. State and runner are donated.
    """

    def one_update(carry):
        state, runner = carry
        runner, ro, episodes = rollout(agent, env, agent.actor_params(state), runner,
                                       unroll_length, episode_metrics)
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


def place_replicated(tree: PyTree, mesh: Mesh) -> PyTree:
    """One copy per device (each process passes its identical copy, multi-host), from fresh
    host copies: the update donates its inputs, and two leaves sharing one buffer (an LSTM's
    zero (c, h) state) cannot both be donated (podracer/placement.py)."""
    return placement.place(tree, NamedSharding(mesh, P()), copy=True)


def place_runner(runner: Runner, mesh: Mesh) -> Runner:
    """This process's envs split along axis 0 over its devices (global arrays, multi-host)."""
    return place_split(runner, mesh, 0)


def place_split(tree: PyTree, mesh: Mesh, env_axis: int) -> PyTree:
    """This process's data split along `env_axis` over the devices (global arrays)."""
    spec = (None,) * env_axis + (AXIS,)
    return placement.place(tree, NamedSharding(mesh, P(*spec)), copy=True)


def runner_key(seed: int, start_update: int = 0) -> jax.Array:
    """The key every env stream of a process derives from: distinct per process, and fresh
    (but reproducible) for a run resumed at update > 0, as sebulba.runner.actor_seed."""
    key = jax.random.fold_in(jax.random.key(seed), 0x414E414B)  # apart from the init key
    key = jax.random.fold_in(key, start_update)
    return jax.random.fold_in(key, jax.process_index())
