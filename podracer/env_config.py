"""The env section's fields every runtime reads (`EnvSection`): which env, its options, the
randomised scenarios, the episode metrics and the action mask. The Anakin driver reads the env
section as this; Sebulba's host envs extend it with their own fields (sebulba.envs.EnvConfig:
EnvPool threads, Atari preprocessing, worker processes, scenario pools)."""
from __future__ import annotations

import dataclasses
from typing import Any

from podracer import episode_metrics, scenarios

MASK_EMPTY = ("error", "allow")  # env.action_mask_empty


@dataclasses.dataclass(frozen=True)
class EnvSection:
    """The env fields both runtimes read; a runtime's own env settings extend it."""

    name: str = ""                   # the env: a JAX-native env for Anakin (gymnax:<id>, a
                                     # registered one); Sebulba's EnvConfig says what it takes
    # Extra settings: passed to a registered env's maker (as env_config.options), to
    # gymnasium.make for "gymnasium:<id>" names, to envpool.make for EnvPool ids, and as
    # gymnax EnvParams overrides.
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Randomised scenarios: env parameters each env draws at every reset, as
    # "field=uniform(lo, hi); field=choice(a, b); field=normal(m, s); field=module:function"
    # (podracer/scenarios.py); "" = the fixed `options`. gymnax EnvParams (either runtime),
    # a gymnasium env's attributes and registered envs that declare scenario_fields
    # (Sebulba); an EnvPool id's numeric options, drawn per pool (scenario_pools). A
    # curriculum: "field=A -> B over N env_steps" (or updates) moves A's numbers to B's
    # (not on EnvPool ids; podracer/curriculum.py).
    randomize: str = ""
    # Per-step info fields reduced over each game and logged beside the return, as
    # "field:reduction,..." with max | mean | sum | last, e.g. "crashed:max,speed:mean"
    # (podracer/episode_metrics.py); "" = none; "auto" = those of crashed:max,
    # is_success:max, speed:mean that an env declaring its info fields (EnvPool: the highway
    # family, the robotics tasks) reports.
    episode_metrics: str = "auto"
    # The observation entry holding the legal actions (1 = legal) that masks the policy's
    # categorical head (networks/distributions.py): "auto" = jumanji's `action_mask` or pgx's
    # `legal_action_mask` when the observation has it and it fits the actions; "" = none.
    action_mask_key: str = "auto"
    # A step whose mask allows no action: "error" stops the run naming the update (a mask
    # that is wrong); "allow" is for envs where it is the rule (jumanji's Snake when trapped):
    # such a step's policy is the unmasked one.
    action_mask_empty: str = "error"

    def __post_init__(self) -> None:
        if not isinstance(self.action_mask_key, str):
            raise ValueError(f"action_mask_key={self.action_mask_key!r} must be an observation "
                             f"key, 'auto' or '' (none).")
        if self.action_mask_empty not in MASK_EMPTY:
            raise ValueError(f"action_mask_empty={self.action_mask_empty!r} must be one of "
                             f"{MASK_EMPTY} (error: stop on a step whose mask allows no "
                             f"action; allow: it is the env's rule).")
        try:
            scenarios.parse(self.randomize)
        except ValueError as e:
            raise ValueError(f"randomize={self.randomize!r}: {e}") from None
        try:
            episode_metrics.parse(self.episode_metrics)
        except ValueError as e:
            raise ValueError(f"episode_metrics={self.episode_metrics!r}: {e}") from None
