"""Many agents in one compiled program: N seeds, and N settings of hyperparameters that keep
every shape, trained side by side by `vmap` (purejaxrl's "many seeds in parallel", for any agent
of this codebase).

A `Population` is M members. Member m has its own seed (its parameters, optimiser state, env
states and key streams are those a single run with that seed would have) and its own values of
the varied hyperparameters, passed to `make_agent` as traced scalars, so one program serves
them all. The `vmap` runs inside the `shard_map` of the update (anakin/update_program.py): every
device holds every member's learner state and its share of every member's envs, so each member
keeps the exact property of a single run (N devices == 1 device on the whole batch), its
gradient mean over the devices included; members never exchange anything.

A member is exactly the single run of its seed and settings, within float tolerance (XLA may
fuse a batched program differently): tests/anakin/test_population.py checks the parameters
after several updates against single runs.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from anakin import actor, host_games, key_streams, learner, topology, update_program
from podracer.agent import Agent
from podracer.episode_metrics import EpisodeMetric

PyTree = Any


@dataclasses.dataclass(frozen=True)
class Population:
    """M members: `make_agent(hparams)` builds member m's agent from its values of the varied
    hyperparameters (a dict of scalars, traced in the compiled program; {} when only seeds
    vary), `hparams` holds them ({name: [M] array}), `seeds` the members' seeds."""

    make_agent: Callable[[Mapping[str, Any]], Agent]
    seeds: tuple[int, ...]
    hparams: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        m = len(self.seeds)
        if m < 1:
            raise ValueError("a population needs at least one member (seeds is empty).")
        for name, values in self.hparams.items():
            if np.shape(values) != (m,):
                raise ValueError(f"hparams[{name!r}] has shape {np.shape(values)}; expected "
                                 f"({m},): one value per member.")

    @property
    def size(self) -> int:
        return len(self.seeds)

    @classmethod
    def single(cls, agent: Agent, seed: int) -> "Population":
        return cls(lambda hp: agent, (seed,))

    def member_hparams(self, m: int) -> dict[str, Any]:
        return {name: values[m] for name, values in self.hparams.items()}

    def stacked_hparams(self) -> dict[str, jax.Array]:
        return {name: jnp.asarray(values) for name, values in self.hparams.items()}


def init(population: Population, env, example_obs, start_update: int, num_envs: int,
         num_metrics: int = 0, steps_per_update: int = 0, metric_names: Sequence[str] = ()):
    """(learner states [M, ...], runners [M, B, ...]): member m initialised as a single run of
    seed `seeds[m]` is (actor.init_runner, runner_key), in one compiled program."""
    seeds = jnp.asarray(population.seeds, jnp.uint32)

    def member(hp, seed):
        agent = population.make_agent(hp)
        state = agent.init(key_streams.init_key(seed), example_obs)
        runner = actor.init_runner(agent, env, key_streams.runner_key(seed, start_update),
                                   num_envs, num_metrics, start_update, steps_per_update,
                                   metric_names)
        return state, runner
    # Member by member (lax.map), not vmap: a vmapped init of a 64x64 MLP with its own value
    # torso never finished on XLA:CPU here (jax 0.10.2; the CPU idle, so a deadlock, likely in
    # the batched QR of the orthogonal initialisers), where a 16-unit one did. Init runs once.
    return jax.jit(lambda hp, s: jax.lax.map(lambda a: member(*a), (hp, s)))(
        population.stacked_hparams(), seeds)


def place(states, runners, mesh: Mesh):
    """Every member's learner state on every device; each member's envs split over them
    (axis 1 of the runner leaves, after the member axis)."""
    return topology.place_replicated(states, mesh), topology.place_split(runners, mesh, 1)


def make_update_fn(population: Population, env, mesh: Mesh, unroll_length: int,
                   updates_per_call: int = 1, episode_metrics: Sequence[EpisodeMetric] = (),
                   steps_per_update: int = 0):
    """Jitted update(hparams, states, runners) -> (states, runners, metrics, episodes) for all
    members at once: `updates_per_call` (K) rounds of {rollout, learn} per member, as
    update_program.make_update_fn runs them for one (with K > 1, the call length n <= K is a
    keyword: update(hparams, states, runners, n=K)). Metrics leaves are [M] ([K, M] with K > 1),
    episodes [M, T, B] ([K, M, T, B]), each game with its `episode_metrics`. States and
    runners are donated.

    `active=` ([M] bools, default all) freezes the members it marks False: their learner
    states leave the call as they entered it (every leaf, counters and keys included), while
    their envs step on in the shared program; the loop freezes a diverged member so."""

    def one_update(hp, active, state, runner):
        agent = population.make_agent(hp)
        runner, ro, episodes = actor.rollout(agent, env, agent.actor_params(state), runner,
                                             unroll_length, episode_metrics, steps_per_update)
        new_state, metrics = learner.learn(agent, state, ro)
        return _select(active, new_state, state), runner, metrics, episodes

    members = jax.vmap(one_update)

    def per_device(hp, active, states, runners, *n):
        if updates_per_call == 1:
            return members(hp, active, states, runners)

        def round_(carry):
            s, r, m, e = members(hp, active, *carry)
            return (s, r), (m, e)
        (states, runners), (metrics, episodes) = update_program.fused_rounds(
            round_, (states, runners), n[0], updates_per_call)
        return states, runners, metrics, episodes

    env_axis = (None,) * (2 if updates_per_call == 1 else 3)
    in_specs = ((P(), P(), P(), P(None, topology.AXIS))
                + (() if updates_per_call == 1 else (P(),)))
    sharded = jax.shard_map(per_device, mesh=mesh, in_specs=in_specs,
                            out_specs=(P(), P(None, topology.AXIS), P(),
                                       P(*env_axis, topology.AXIS)), check_vma=False)
    call = update_program.with_call_length(jax.jit(sharded, donate_argnums=(2, 3)),
                                           updates_per_call)
    everyone = np.ones(population.size, bool)

    def update(hparams, states, runners, *, active=None, **n):
        active = everyone if active is None else np.asarray(active, bool)
        if active.shape != everyone.shape:
            raise ValueError(f"active has shape {active.shape}; expected {everyone.shape}: "
                             f"one flag per member.")
        return call(hparams, active, states, runners, **n)
    return update


def _select(keep_new: jax.Array, new: PyTree, old: PyTree) -> PyTree:
    """`new` where `keep_new`, else `old`, leaf by leaf (PRNG keys through their data)."""
    def pick(a, b):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            data = jnp.where(keep_new, jax.random.key_data(a), jax.random.key_data(b))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(a))
        return jnp.where(keep_new, a, b)
    return jax.tree.map(pick, new, old)


def member_state(states: PyTree, m: int) -> PyTree:
    """Member m's learner state out of the population's (host side)."""
    return jax.tree.map(lambda x: x[m], states)


def local_episodes(episodes: actor.Episodes, size: int, rounds: int | None = None
                   ) -> list[list[list[tuple]]]:
    """The games this process's envs finished, per update of the call and per member:
    out[k][m] from a record [M, T, B] (one update) or [K, M, T, B] (a fused call), of its
    first `rounds` rounds (host_games.local_episodes)."""
    over, ret, length, metrics = host_games.host_rounds(episodes, rounds, 3)
    return [[host_games.games(over[k, m], ret[k, m], length[k, m], metrics[k, m])
             for m in range(size)]
            for k in range(over.shape[0])]
