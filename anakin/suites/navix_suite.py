"""NAVIX (Navix 0.7.4, checked with jax 0.10.2) as a `RawEnv`: "navix:<id>".

Ids: navix's registry (`navix.registry()`: 41 ids), e.g. Navix-Empty-5x5-v0,
Navix-Empty-8x8-v0, Navix-DoorKey-5x5-v0, Navix-FourRooms-v0 (`ENV_IDS` lists them; a test
keeps the list equal to the installed registry).

The suite's conventions and how they are mapped:
- Auto-reset: `Environment.step(timestep, action)` resets (with the key kept in the state)
  when the previous timestep ended an episode, in the step after it (dm_env style). The
  adapter calls `_step`, the transition alone, and `reset`, so `AutoReset` (anakin/envs.py)
  does the resetting with the runtime's keys.
- Termination vs truncation: each timestep carries a `step_type`: TRANSITION (0), TRUNCATION
  (1: `t >= max_steps`, the env's own time limit) or TERMINATION (2: the env's termination
  function, e.g. the goal reached or lava, which wins when both happen on one step).
  TERMINATION is reported as `terminated`, TRUNCATION as `truncated`.
- Time limit: `max_steps` option; default 100, `navix.make`'s default for every id (MiniGrid's
  own limits differ: 4 * height * width for the Empty rooms).
- Reward: the env's reward function (1 when the goal is reached in the registered envs; the
  penalty `penality_coeff * t / max_steps` on termination is 0 unless set), as float32.
- Observations: float32 `Box` of the chosen observation function (option `observation`):
  "symbolic" (navix's default: the full grid [H, W, 3] of (entity tag, colour, state) triples,
  read by the MLP after flattening), "symbolic_first_person" ([7, 7, 3], the agent's view),
  "categorical" / "categorical_first_person" (entity tags [H, W] / [7, 7]), "rgb" /
  "rgb_first_person" (uint8 images cast to float32 in [0, 255], for the conv torsos, which
  divide by 255). Actions: Discrete(7) (MiniGrid's left, right, forward, pickup, drop, toggle,
  done).
- Extra state: navix keeps a rendering cache (background tiles, H * W * 192 bytes) in every
  state, read only by the rgb observations; for the others the adapter replaces it with an
  empty one so the runtime does not carry and select it on every step. The state's weakly
  typed leaves (navix's Python-scalar constants, e.g. the running return) are made strongly
  typed, so a step returns the types the reset did (else the runtime's update, whose first
  state is strongly typed, would be compiled twice).
- Randomness: navix steps are deterministic given the state (stochastic entities such as the
  dynamic obstacles draw from the key navix keeps in its state), so `transition` ignores its
  key, as navix's own step does.

Importing navix builds jnp constants (and so starts a JAX backend), so `make` checks the id and
options against this module's lists and the env is built on first use, as `GymnaxEnv` builds
its spaces.
"""
from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from anakin.suites import refuse_unknown_options, strong_types

ENV_IDS = (
    "Navix-Empty-5x5-v0", "Navix-Empty-6x6-v0", "Navix-Empty-8x8-v0", "Navix-Empty-16x16-v0",
    "Navix-Empty-Random-5x5-v0", "Navix-Empty-Random-6x6-v0", "Navix-Empty-Random-8x8-v0",
    "Navix-Empty-Random-16x16-v0",
    "Navix-DoorKey-5x5-v0", "Navix-DoorKey-6x6-v0", "Navix-DoorKey-8x8-v0",
    "Navix-DoorKey-16x16-v0", "Navix-DoorKey-Random-5x5-v0", "Navix-DoorKey-Random-6x6-v0",
    "Navix-DoorKey-Random-8x8-v0", "Navix-DoorKey-Random-16x16-v0",
    "Navix-FourRooms-v0",
    "Navix-KeyCorridorS3R1-v0", "Navix-KeyCorridorS3R2-v0", "Navix-KeyCorridorS3R3-v0",
    "Navix-KeyCorridorS4R3-v0", "Navix-KeyCorridorS5R3-v0", "Navix-KeyCorridorS6R3-v0",
    "Navix-LavaGapS5-v0", "Navix-LavaGapS6-v0", "Navix-LavaGapS7-v0",
    "Navix-SimpleCrossingS9N1-v0", "Navix-SimpleCrossingS9N2-v0",
    "Navix-SimpleCrossingS9N3-v0", "Navix-SimpleCrossingS11N5-v0",
    "Navix-Dynamic-Obstacles-5x5-v0", "Navix-Dynamic-Obstacles-5x5-Random-v0",
    "Navix-Dynamic-Obstacles-6x6-v0", "Navix-Dynamic-Obstacles-6x6-Random-v0",
    "Navix-Dynamic-Obstacles-8x8-v0", "Navix-Dynamic-Obstacles-16x16-v0",
    "Navix-DistShift1-v0", "Navix-DistShift2-v0",
    "Navix-GoToDoor-5x5-v0", "Navix-GoToDoor-6x6-v0", "Navix-GoToDoor-8x8-v0",
)

# observation option -> the observation's value range (symbolic and rgb are uint8; the
# categorical grids hold entity tags, 1..10, with -1 for walls and, first person, 100 for
# cells outside the map: navix's crop padding)
OBSERVATIONS = {
    "symbolic": (0, 255),
    "symbolic_first_person": (0, 255),
    "categorical": (-1, 10),
    "categorical_first_person": (-1, 100),
    "rgb": (0, 255),
    "rgb_first_person": (0, 255),
}
OPTIONS = ("max_steps", "observation")
DEFAULT_MAX_STEPS = 100  # navix.make's default


class NavixEnv:
    """One navix env as a `RawEnv` (see the module docstring): navix's `_step` without its
    auto-reset, TERMINATION as `terminated`, TRUNCATION (its `max_steps`) as `truncated`."""

    def __init__(self, env_id: str, max_steps: int = DEFAULT_MAX_STEPS,
                 observation: str = "symbolic") -> None:
        self.env_id = env_id
        self.max_steps = max_steps
        self.observation = observation

    @functools.cached_property
    def env(self):
        """The navix env, built on first use (importing navix starts a JAX backend)."""
        navix = _import_navix()
        with jax.ensure_compile_time_eval():  # its spaces hold jnp arrays: concrete ones
            return navix.make(self.env_id, max_steps=self.max_steps,
                              observation_fn=getattr(navix.observations, self.observation))

    @property
    def observation_space(self):
        from gymnasium import spaces
        low, high = OBSERVATIONS[self.observation]
        return spaces.Box(low, high, tuple(self.env.observation_space.shape), np.float32)

    @property
    def action_space(self):
        from gymnasium import spaces
        return spaces.Discrete(len(self.env.action_set))

    def reset(self, key):
        timestep = self.env.reset(key)
        if not self.observation.startswith("rgb"):
            timestep = timestep.replace(state=timestep.state.replace(cache=_empty_cache()))
        return strong_types(timestep), self._obs(timestep)

    def transition(self, key, timestep, action):
        del key  # navix draws from the key in its state (see the module docstring)
        navix = _import_navix()
        timestep = self.env._step(timestep, action)
        terminated = timestep.step_type == navix.StepType.TERMINATION
        truncated = timestep.step_type == navix.StepType.TRUNCATION
        reward = timestep.reward.astype(np.float32)
        return strong_types(timestep), self._obs(timestep), reward, terminated, truncated

    @staticmethod
    def _obs(timestep):
        return timestep.observation.astype(np.float32)


def _import_navix():
    """navix, imported eagerly even when first needed inside a trace (`reset` or `transition`
    under jit): its modules build jnp constants on import, which a trace would turn into
    tracers kept in module globals (leaked: the next trace fails)."""
    with jax.ensure_compile_time_eval():
        import navix
    return navix


def _empty_cache():
    """A rendering cache with no tiles: what non-rgb observations leave in the state."""
    _import_navix()
    from navix.rendering.cache import TILE_SIZE, RenderingCache
    return RenderingCache(patches=jnp.zeros((0, TILE_SIZE, TILE_SIZE, 3), jnp.uint8))


def make(env_id: str, options: dict) -> NavixEnv:
    """The `RawEnv` of navix env `env_id`; `options`: max_steps (int, default 100) and
    observation (one of `OBSERVATIONS`, default "symbolic")."""
    if env_id not in ENV_IDS:
        raise ValueError(f"unknown navix env {env_id!r}; allowed: {', '.join(ENV_IDS)}.")
    refuse_unknown_options(f"navix:{env_id}", options, OPTIONS)
    max_steps = options.get("max_steps", DEFAULT_MAX_STEPS)
    if not isinstance(max_steps, numbers.Integral) or max_steps < 1:
        raise ValueError(f"navix {env_id}: option max_steps={max_steps!r}; allowed: an int "
                         f">= 1.")
    observation = options.get("observation", "symbolic")
    if observation not in OBSERVATIONS:
        raise ValueError(f"navix {env_id}: option observation={observation!r}; allowed: "
                         f"{list(OBSERVATIONS)}.")
    return NavixEnv(env_id, int(max_steps), observation)
