"""The members a config names: N seeds and N settings in one program, from
`--config.num_seeds=N` and `--config.vary='agent.learning_rate=[1e-4,3e-4];...'`.

Member m is a setting (one value of every varied field, settings outermost) and a seed; each
member is its own run under `<run_dir>/members/` (its config.json, logs and summary.json,
written by the session), and one checkpoint holds them all. What the config fields mean, and
which run a member is, is read here for every tool (a resume, scripts/evaluate.py); the agents
trained together are the Anakin driver's (experiments/wiring/drivers/anakin_population.py).
docs/anakin.md, "Many seeds and settings in one program".
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import itertools
from typing import Any, Mapping

import ml_collections

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
