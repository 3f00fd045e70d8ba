"""N seeds and N settings in one compiled program (Anakin): the members of a population, from
`--config.num_seeds=N` and `--config.vary='agent.learning_rate=[1e-4,3e-4];...'`.

Member m is a setting (one value of every varied field, settings outermost) and a seed; each
member is its own run under `<run_dir>/members/`, and one checkpoint holds them all. Only agent
fields that change no shape and no Python branch can vary (they are traced scalars of one
program); any other is refused before anything trains. docs/anakin.md, "Many seeds and
settings in one program".
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import itertools
from typing import Any, Mapping

import jax
import ml_collections
import numpy as np

from anakin.population import Population
from podracer.schema import read_section
from podracer.validation import ConfigError


@dataclasses.dataclass(frozen=True)
class Member:
    index: int
    seed: int
    settings: tuple[tuple[str, Any], ...]  # (agent field, value) of each varied field

    @property
    def name(self) -> str:
        """Its dir under members/: index, seed and values, e.g. `03-s1-learning_rate=0.001`."""
        parts = [f"{self.index:02d}", f"s{self.seed}"]
        parts += [f"{field}={value!r}" for field, value in self.settings]
        return "-".join(parts).replace("/", "_")


def parse_vary(text: str) -> list[tuple[str, tuple]]:
    """`agent.x=[1, 2];agent.y=[0.1, 0.2]` -> [("x", (1, 2)), ("y", (0.1, 0.2))]."""
    out: list[tuple[str, tuple]] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        field, sep, values = part.partition("=")
        field = field.strip()
        try:
            parsed = ast.literal_eval(values.strip()) if sep else None
        except (ValueError, SyntaxError):
            parsed = None
        if not isinstance(parsed, (list, tuple)) or not parsed:
            raise ConfigError(f"vary={text!r}: {part!r} is not FIELD=[value, ...]; e.g. "
                              f"--config.vary='agent.learning_rate=[1e-4,3e-4,1e-3]' "
                              f"(';' between fields).")
        section, _, name = field.partition(".")
        if section != "agent" or not name:
            raise ConfigError(
                f"vary: {field!r} cannot vary within one program: only agent fields can (the "
                f"values are traced scalars of one compiled update; the network, the env and "
                f"the runtime's fields set shapes). Run separate programs for it "
                f"(scripts/sweep.py).")
        if name in (n for n, _ in out):
            raise ConfigError(f"vary: {field} is given twice.")
        out.append((name, tuple(parsed)))
    return out


def members(seed: int, num_seeds: int, vary: list[tuple[str, tuple]]) -> list[Member]:
    """Every member: each setting of the crossed varied values, with each seed."""
    names = [n for n, _ in vary]
    settings = list(itertools.product(*[values for _, values in vary])) or [()]
    return [Member(i, seed + s, tuple(zip(names, setting)))
            for i, (setting, s) in enumerate(itertools.product(settings, range(num_seeds)))]


def saved_members(config: ml_collections.ConfigDict) -> list[Member] | None:
    """The members of a run from its saved config (a checkpoint's or config.json), or None
    for a run of one agent (configs without the population fields included)."""
    vary = parse_vary(config.get("vary", "") or "")
    num_seeds = int(config.get("num_seeds", 1) or 1)
    if num_seeds == 1 and not vary:
        return None
    return members(int(config.seed), num_seeds, vary)


def check_same_members(saved: Mapping, current: Mapping) -> None:
    """A resume pairs the checkpoint's member i with this run's member i: refuses (ValueError)
    a run whose members are not the checkpoint's, naming each field that differs with both
    values. The shapes cannot catch it: values reordered or changed, or another `seed`, fit
    the same arrays and would splice two runs into one curve. A run of one agent may change
    its seed (it only picks the env streams from the resume on)."""
    def population(config: Mapping) -> tuple[int, int, list[tuple[str, tuple]]] | None:
        num_seeds, vary = int(config.get("num_seeds", 1) or 1), config.get("vary", "") or ""
        if num_seeds == 1 and not vary:
            return None
        return int(config.get("seed", 0)), num_seeds, parse_vary(vary)

    before, now = population(saved), population(current)
    if before is None and now is None:
        return
    if before is None or now is None:
        raise ValueError(
            "the checkpoint holds " + ("one agent" if before is None else "a population")
            + " and this run is " + ("a population" if before is None else "one agent")
            + f" (num_seeds={saved.get('num_seeds', 1)!r}, vary={saved.get('vary', '')!r} "
            f"in the checkpoint; num_seeds={current.get('num_seeds', 1)!r}, "
            f"vary={current.get('vary', '')!r} now): resume with the checkpoint's values.")
    differ = [f"{field}: checkpoint {a!r}, this run {b!r}"
              for field, a, b, same in (
                  ("seed", saved.get("seed"), current.get("seed"), before[0] == now[0]),
                  ("num_seeds", before[1], now[1], before[1] == now[1]),
                  ("vary", saved.get("vary"), current.get("vary"), before[2] == now[2]))
              if not same]
    if differ:
        raise ValueError("the checkpoint's members are not this run's (member i resumes "
                         "member i's state; values reordered or changed would pair states "
                         "with other settings): " + "; ".join(differ)
                         + ". Resume with the checkpoint's values, or start a new run.")


def describe(all_members: list[Member]) -> str:
    """One line listing the members: `0 (seed 0, learning_rate=0.001), 1 (...)`."""
    return ", ".join(f"{m.index} (seed {m.seed}"
                     + "".join(f", {field}={value!r}" for field, value in m.settings) + ")"
                     for m in all_members)


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


def member_config(config: ml_collections.ConfigDict, member: Member
                  ) -> ml_collections.ConfigDict:
    """The config a single run of this member would have (its config.json): a copy of
    `config` (a ConfigDict or a frozen one)."""
    out = ml_collections.ConfigDict(copy.deepcopy(config))
    with out.unlocked():
        out.seed = member.seed
        out.num_seeds = 1
        out.vary = ""
        out.run_dir = ""
        out.resume = ""
        for name, value in member.settings:
            out.agent[name] = value
    return out


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
    from anakin import population as anakin_population
    from anakin import runtime
    mesh = runtime.make_mesh(ac.learner_device_ids, processes=False)
    for name in pop.hparams:
        one = dataclasses.replace(pop, hparams={name: pop.hparams[name]})
        try:
            states, runners = jax.eval_shape(
                lambda: anakin_population.init(one, env, example_obs, 0, ac.num_envs))
            update = anakin_population.make_update_fn(one, env, mesh, ac.unroll_length)
            jax.eval_shape(update, one.stacked_hparams(), states, runners)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError,
                TypeError) as e:
            first = (str(e).strip().splitlines() or [""])[0][:160]
            raise ConfigError(
                f"vary: agent.{name} cannot vary within one program: the agent uses it as a "
                f"shape or in a Python branch ({type(e).__name__}: {first}). Run separate "
                f"programs for it (scripts/sweep.py).") from None
