"""Randomised scenarios (env.randomize) for envs stepped on the host: each env draws its
parameters anew at every reset, with numpy, from its own generator.

- `Sampler`: one env's draws (the distributions of podracer/scenarios.py), seeded by the env's
  seed, so env i draws the same scenarios in the actor's process and in a worker's
  (env.workers). A registered env's maker uses it to vary its own simulator (its batch declares
  the fields it can vary as `scenario_fields`).
- `Randomized`: a gymnasium.Wrapper that sets the drawn values as attributes of the unwrapped
  env before each reset (gymnasium's classic control reads its physics from them: Pendulum's
  `m`, `l`, `g`, CartPole's `length`, ...), recomputes the fields derived from them, and reports
  them in every info under "scenario" (what env.episode_metrics and the per-bin summaries read).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import gymnasium
import numpy as np

from podracer import scenarios
from podracer.curriculum import TrainingProgress

# Attributes of a gymnasium env that are not its physics (rendering sizes).
_NOT_PHYSICS = ("screen_dim", "screen_width", "screen_height", "metadata")


class Sampler:
    """One env's scenarios: `draw(defaults)` returns a value per drawn field (an integer
    field, one whose default is an int, draws integers)."""

    def __init__(self, text_or_draws: str | Sequence[scenarios.Draw], seed: int | None) -> None:
        self.draws = (scenarios.parse(text_or_draws) if isinstance(text_or_draws, str)
                      else tuple(text_or_draws))
        self.rng = np.random.default_rng(seed)
        self._functions = {d.field: scenarios.resolve(d) for d in self.draws
                           if d.kind == "function"}

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(d.field for d in self.draws)

    @property
    def scheduled(self) -> bool:
        """Whether a curriculum moves one of the draws (podracer/curriculum.py)."""
        return bool(scenarios.scheduled(self.draws))

    def draw(self, defaults: dict[str, Any],
             progress: TrainingProgress | None = None) -> dict[str, Any]:
        """A value per drawn field; a scheduled field from its distribution at `progress`
        (its end when None: an evaluation plays the task the curriculum leads to)."""
        out = {}
        for d in self.draws:
            integer = isinstance(defaults.get(d.field), (int, np.integer))
            args = tuple(float(a) for a in d.args_at(progress))
            if d.kind == "function":  # the user's JAX distribution, from a key of our stream
                import jax
                key = jax.random.key(int(self.rng.integers(2**31)))
                value = float(np.asarray(self._functions[d.field](key)))
            elif d.kind == "choice":
                value = args[int(self.rng.integers(len(args)))]
            elif d.kind == "uniform" and integer:
                value = int(self.rng.integers(int(args[0]), int(args[1]) + 1))
            elif d.kind == "uniform":
                value = float(self.rng.uniform(*args))
            elif d.kind == "loguniform":
                value = math.exp(self.rng.uniform(math.log(args[0]), math.log(args[1])))
            else:  # normal
                value = float(self.rng.normal(*args))
            out[d.field] = int(round(value)) if integer else float(value)
        return out


def variable_fields(env: Any) -> tuple[str, ...]:
    """What env.randomize can vary on a gymnasium env: the public numeric attributes of its
    unwrapped env (not booleans, rendering sizes or fields derived from others)."""
    unwrapped = env.unwrapped
    derived = scenarios.DERIVED.get(getattr(unwrapped.spec, "id", None) or "")
    return tuple(name for name, value in vars(unwrapped).items()
                 if not name.startswith("_") and name not in _NOT_PHYSICS
                 and isinstance(value, (int, float, np.integer, np.floating))
                 and not isinstance(value, (bool, np.bool_))
                 and not (derived and name in derived.fields))


class Randomized(gymnasium.Wrapper):
    """The env's drawn scenario set before each of its resets (module docstring)."""

    def __init__(self, env: Any, randomize: str) -> None:
        super().__init__(env)
        draws = scenarios.parse(randomize)
        spec_id = getattr(env.unwrapped.spec, "id", None) or type(env.unwrapped).__name__
        scenarios.check_fields(draws, variable_fields(env),
                               f"env.randomize on gymnasium {spec_id}")
        self._draws, self._sampler = draws, None
        self._derived = scenarios.DERIVED.get(spec_id)
        self._scenario: dict[str, Any] = {}
        self._progress: TrainingProgress | None = None
        # A curriculum: the runtime hands the training progress before the resets it governs.
        self.reads_progress = bool(scenarios.scheduled(draws))

    def set_progress(self, progress: TrainingProgress) -> None:
        """The training progress the next resets draw at (podracer/curriculum.py)."""
        self._progress = progress

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self._sampler is None or seed is not None:  # env i's first reset: seed + i
            self._sampler = Sampler(self._draws, seed)
        unwrapped = self.env.unwrapped
        self._scenario = self._sampler.draw({f: getattr(unwrapped, f)
                                             for f in self._sampler.fields}, self._progress)
        for field, value in self._scenario.items():
            setattr(unwrapped, field, value)
        if self._derived:
            for field, value in self._derived.recompute(unwrapped).items():
                setattr(unwrapped, field, value)
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, {**info, "scenario": dict(self._scenario)}

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, "scenario": dict(self._scenario)}


def randomized(env: Any, randomize: str) -> Any:
    """`env` (a gymnasium.Env) drawing the scenarios of `randomize` at each reset; ValueError
    naming a field it cannot vary, and those it can."""
    return Randomized(env, randomize)
