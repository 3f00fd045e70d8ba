"""XLand-MiniGrid (xminigrid 0.9.3, checked with jax 0.10.2) as a `RawEnv`: "xminigrid:<id>".

Ids: the suite's MiniGrid ports (`MINIGRID_IDS`: MiniGrid-Empty-5x5, MiniGrid-DoorKey-8x8,
MiniGrid-FourRooms, ...; a test keeps the list equal to the installed registry's MiniGrid-*
ids). The XLand-MiniGrid-R*-* ids are not served: their task (goal and rules) comes from a
benchmark of rulesets that `xminigrid.load_benchmark` downloads, and without one the env's
default ruleset has a goal that is never reached (every episode would run to the time limit).

The suite's conventions and how they are mapped:
- Auto-reset: `Environment.step(params, timestep, action)` does not reset (the suite's
  `GymAutoResetWrapper` / `DmEnvAutoResetWrapper` add that, and the adapter uses neither), so
  the adapter calls `reset` and `step` as they are and `AutoReset` (anakin/envs.py) resets.
- Termination vs truncation: a timestep's `step_type` is LAST for both; its `discount` is 0
  when the goal was reached (termination, which wins when both happen on one step) and 1 at
  the time limit (`step_num == max_steps`). LAST with discount 0 is reported as `terminated`,
  LAST with discount 1 as `truncated`.
- Time limit: the suite's own `max_steps` (EnvParams; per env, MiniGrid's: 4 * height * width
  for the Empty rooms, 10 * height * width for DoorKey, 100 for FourRooms, ...), overridable
  by the `max_steps` option.
- Reward: 1 - 0.9 * step_num / max_steps on reaching the goal, else 0 (MiniGrid's), as
  float32.
- Observations: the agent's egocentric view, a uint8 grid [view_size, view_size, 2] of (tile,
  colour) ids, cast to a float32 `Box` (tiles 0..12, colours 0..11); view_size is 7 (3 in the
  Memory envs), overridable by the `view_size` option. Actions: Discrete(6) (forward, right,
  left, pick up, put down, toggle).
- Randomness: `step` is deterministic; a new layout is drawn only by `reset`, from its key.
- State: the suite's `TimeStep`. Its weakly typed leaves (the suite's Python-scalar constants,
  e.g. reward and discount) are made strongly typed, so a step returns the types the reset did
  (else the runtime's update, whose first state is strongly typed, is compiled twice: measured
  here, +50 s on a loaded 2-core CPU).

Importing xminigrid builds jnp constants (and so starts a JAX backend), so `make` checks the id
and options against this module's lists and the env is built on first use, as `GymnaxEnv`
builds its spaces.
"""
from __future__ import annotations

import functools
import numbers

import jax
import numpy as np

from anakin.suites import refuse_unknown_options, strong_types

MINIGRID_IDS = (
    "MiniGrid-BlockedUnlockPickUp",
    "MiniGrid-DoorKey-5x5", "MiniGrid-DoorKey-6x6", "MiniGrid-DoorKey-8x8",
    "MiniGrid-DoorKey-16x16",
    "MiniGrid-Empty-5x5", "MiniGrid-Empty-6x6", "MiniGrid-Empty-8x8", "MiniGrid-Empty-16x16",
    "MiniGrid-EmptyRandom-5x5", "MiniGrid-EmptyRandom-6x6", "MiniGrid-EmptyRandom-8x8",
    "MiniGrid-EmptyRandom-16x16",
    "MiniGrid-FourRooms", "MiniGrid-LockedRoom",
    "MiniGrid-MemoryS8", "MiniGrid-MemoryS16", "MiniGrid-MemoryS32", "MiniGrid-MemoryS64",
    "MiniGrid-MemoryS128",
    "MiniGrid-Playground", "MiniGrid-Unlock", "MiniGrid-UnlockPickUp",
)
OPTIONS = ("max_steps", "view_size")  # EnvParams fields


class XMiniGridEnv:
    """One XLand-MiniGrid env as a `RawEnv` (see the module docstring): the suite's `step`
    (no auto-reset), discount 0 at the end as `terminated`, 1 (its max_steps) as `truncated`."""

    def __init__(self, env_id: str, options: dict) -> None:
        self.env_id = env_id
        self.options = dict(options)

    @functools.cached_property
    def _env_and_params(self):
        """(env, EnvParams), built on first use (importing xminigrid starts a JAX backend).
        Eagerly even when first needed inside a trace (`reset` or `transition` under jit): the
        suite's modules build jnp constants on import, which a trace would turn into tracers
        kept in module globals (leaked: the next trace fails)."""
        with jax.ensure_compile_time_eval():
            import xminigrid
            return xminigrid.make(self.env_id, **self.options)

    @property
    def env(self):
        return self._env_and_params[0]

    @property
    def params(self):
        return self._env_and_params[1]

    @property
    def observation_space(self):
        from gymnasium import spaces
        env, params = self._env_and_params  # imports xminigrid first (see there)
        from xminigrid.core.constants import NUM_COLORS, NUM_TILES
        shape = tuple(env.observation_shape(params))
        high = np.broadcast_to(np.array([NUM_TILES - 1, NUM_COLORS - 1], np.float32), shape)
        return spaces.Box(np.zeros(shape, np.float32), high, shape, np.float32)

    @property
    def action_space(self):
        from gymnasium import spaces
        return spaces.Discrete(self.env.num_actions(self.params))

    def reset(self, key):
        timestep = self.env.reset(self.params, key)
        return strong_types(timestep), timestep.observation.astype(np.float32)

    def transition(self, key, timestep, action):
        del key  # the suite's step draws nothing
        timestep = self.env.step(self.params, timestep, action)
        last = timestep.last()
        terminated = last & (timestep.discount == 0.0)
        truncated = last & (timestep.discount != 0.0)
        return (strong_types(timestep), timestep.observation.astype(np.float32),
                timestep.reward.astype(np.float32), terminated, truncated)


def make(env_id: str, options: dict) -> XMiniGridEnv:
    """The `RawEnv` of XLand-MiniGrid env `env_id` (a MiniGrid-* id); `options`: max_steps and
    view_size (ints, overriding the env's EnvParams)."""
    if env_id.startswith("XLand-MiniGrid"):
        raise ValueError(f"xminigrid env {env_id!r} needs a ruleset from an XLand-MiniGrid "
                         f"benchmark (downloaded by xminigrid.load_benchmark), which this "
                         f"adapter does not load; allowed: {', '.join(MINIGRID_IDS)}.")
    if env_id not in MINIGRID_IDS:
        raise ValueError(f"unknown xminigrid env {env_id!r}; allowed: "
                         f"{', '.join(MINIGRID_IDS)}.")
    refuse_unknown_options(f"xminigrid:{env_id}", options, OPTIONS)
    for name, value in options.items():
        if not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"xminigrid {env_id}: option {name}={value!r}; allowed: an int "
                             f">= 1.")
    return XMiniGridEnv(env_id, {k: int(v) for k, v in options.items()})
