"""A population as the Anakin driver trains it: the members a config names
(experiments/wiring/members.py) as one `anakin.population.Population`, each member's agent built
with its values as traced scalars of one program. Only agent fields that change no shape and no
Python branch can vary; any other is refused before anything trains (`check_values`,
`check_traceable`)."""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Mapping

import jax
import ml_collections
import numpy as np

from anakin import population as anakin_population
from anakin import topology
from anakin.population import Population
from experiments.wiring.members import Member
from podracer.schema import read_section
from podracer.validation import ConfigError


def check_values(agent_cfg: Any, config_section: ml_collections.ConfigDict,
                 vary: list[tuple[str, tuple]]) -> None:
    """Every varied value is one the agent's config takes (its type and rules), one field at a
    time; a ConfigError names the field and the value."""
    fields = {f.name for f in dataclasses.fields(agent_cfg)}
    for name, values in vary:
        if name not in fields:
            raise ConfigError(f"vary: agent.{name} is not a field of "
                              f"{type(agent_cfg).__name__}.")
        for value in values:
            section = config_section.to_dict()
            section[name] = value
            try:
                read_section(type(agent_cfg), section, "agent")
            except ConfigError as e:
                raise ConfigError(f"vary: {e}") from None


def population(spec, agent_cfg: Any, network, shape, horizon, all_members: list[Member]
               ) -> Population:
    """The members as one Population: make_agent(hparams) builds the agent with the member's
    values, traced, on the config resolved for this batch (spec.resolve), so the builder's own
    checks see concrete values and only the varied numbers flow as arrays."""
    resolved = spec.resolve(agent_cfg, shape) if spec.resolve is not None else agent_cfg
    names = [n for n, _ in all_members[0].settings]

    def make_agent(hparams: Mapping[str, Any]):
        cfg = copy.copy(resolved)
        for name, value in hparams.items():
            object.__setattr__(cfg, name, value)  # a traced scalar: the checks ran on values
        return spec.build(network, cfg, shape, horizon)

    hparams = {n: np.asarray([dict(m.settings)[n] for m in all_members]) for n in names}
    return Population(make_agent, tuple(m.seed for m in all_members), hparams)


def check_traceable(pop: Population, env, example_obs, ac) -> None:
    """Traces (does not run) one update of the population with one varied field at a time: a
    field the agent uses as a shape or in a Python branch fails to trace, and is refused."""
    mesh = topology.make_mesh(ac.learner_device_ids, processes=False)
    for name in pop.hparams:
        one = dataclasses.replace(pop, hparams={name: pop.hparams[name]})
        try:
            steps = ac.unroll_length * ac.num_envs  # any > 0: a trace, not a run
            states, runners = jax.eval_shape(
                lambda: anakin_population.init(one, env, example_obs, 0, ac.num_envs,
                                               steps_per_update=steps))
            update = anakin_population.make_update_fn(one, env, mesh, ac.unroll_length,
                                                      steps_per_update=steps)
            jax.eval_shape(update, one.stacked_hparams(), states, runners)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError,
                TypeError) as e:
            first = (str(e).strip().splitlines() or [""])[0][:160]
            raise ConfigError(
                f"vary: agent.{name} cannot vary within one program: the agent uses it as a "
                f"shape or in a Python branch ({type(e).__name__}: {first}). Run separate "
                f"programs for it (scripts/sweep.py).") from None


def template(pop: Population, seed: int, example_obs):
    """The learner state's structure a fresh population starts from, as shapes: each leaf of
    one member's with the member axis first."""
    one = jax.eval_shape(pop.make_agent(pop.member_hparams(0)).init, jax.random.key(seed),
                         example_obs)
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct((pop.size,) + s.shape, s.dtype), one)
