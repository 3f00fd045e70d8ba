"""Craftax (craftax 1.6.1, checked with jax 0.10.2) as a `RawEnv`: "craftax:<id>".

Ids: Craftax-Classic-Symbolic-v1, Craftax-Classic-Pixels-v1, Craftax-Symbolic-v1 and
Craftax-Pixels-v1 (craftax.craftax_env.make_craftax_env_from_name's names; its "-AutoReset-"
aliases are left out: the adapter never uses the suite's auto-reset).

The suite's conventions and how they are mapped:
- Auto-reset: the envs are gymnax-style; `step` of the default envs resets in the same step
  (returning the new episode's first observation instead of the final one). The adapter takes
  the suite's no-auto-reset env (`auto_reset=False`) and calls its `step_env` / `reset_env`, so
  `AutoReset` (anakin/envs.py) resets one step late with the real final observation kept.
- Termination vs truncation: `step_env`'s `done` is `is_terminal`, which merges the time limit
  (`state.timestep >= params.max_timesteps`: 10,000 steps in Classic, 100,000 in Craftax) with
  the natural ends (Classic: health <= 0 or standing in lava; Craftax: health <= 0 or the final
  boss beaten). The adapter asks the suite's `is_terminal` again with the time limit lifted for
  `terminated`, and reports the time limit from the state's timestep as `truncated` (only when
  the episode did not also end naturally on that step: a death on the last step is terminal).
- Reward: the suite's (achievements unlocked + 0.1 x health change), as float32.
- Observations: symbolic ids give a flat float32 vector in [0, 1] (Classic 1345, Craftax 8268;
  its inventory part is computed in float16 by the suite and cast here), pixel ids a float32
  [H, W, 3] image in [0, 1] (Classic 63x63, Craftax 130x110), read by the conv torsos. The
  first use of a pixel id in an install processes the suite's textures (minutes: ~1 for
  Classic, ~5 for Craftax on 2 busy cores) and caches them in the package's assets folder.
  Actions: Discrete(17) in Classic, Discrete(43) in Craftax.
- Options: overrides of the suite's `EnvParams` fields (e.g. {"max_timesteps": 1000}), like
  gymnax's EnvParams options in `GymnaxEnv`.

Speed: `AutoReset` computes a reset every step (a select, branch-free under vmap), and Craftax's
reset generates a world: on CPU a batch of `reset_env` costs ~15x a batch of `step_env`, so the
reset dominates the env's time (measured with 64 Classic envs, craftax 1.6.1, jax 0.10.2).

Importing craftax's env modules builds jnp constants (and so starts a JAX backend), so `make`
checks the id and options against the state module only (plain dataclasses) and the env is
built on first use, as `GymnaxEnv` builds its spaces.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

# name -> Classic? (its own EnvParams); the names make_craftax_env_from_name takes without
# auto-reset
ENV_IDS = {
    "Craftax-Classic-Symbolic-v1": True,
    "Craftax-Classic-Pixels-v1": True,
    "Craftax-Symbolic-v1": False,
    "Craftax-Pixels-v1": False,
}

# Lifts the time limit when asking `is_terminal` for the natural ends only (timestep is int32).
_NO_LIMIT = int(np.iinfo(np.int32).max)


def _params_class(classic: bool):
    """The suite's EnvParams class (its state module starts no JAX backend on import)."""
    if classic:
        from craftax.craftax_classic.envs.craftax_state import EnvParams
    else:
        from craftax.craftax.craftax_state import EnvParams
    return EnvParams


def _to_gymnasium(space):
    """A craftax space (its own copy of gymnax's Discrete / Box) as a gymnasium space."""
    from gymnasium import spaces
    if hasattr(space, "n"):
        return spaces.Discrete(int(space.n))
    shape = tuple(space.shape)
    low = np.broadcast_to(np.asarray(space.low, np.float32), shape)
    high = np.broadcast_to(np.asarray(space.high, np.float32), shape)
    return spaces.Box(low, high, shape, dtype=np.float32)


class CraftaxEnv:
    """One Craftax env as a `RawEnv` (see the module docstring): the suite's no-auto-reset
    `step_env` / `reset_env`, the time limit as `truncated`, float32 observations."""

    def __init__(self, env_id: str, options: dict) -> None:
        params_class = _params_class(ENV_IDS[env_id])
        fields = sorted(f.name for f in dataclasses.fields(params_class))
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise ValueError(f"craftax {env_id}: unknown EnvParams field(s) {unknown}; "
                             f"allowed: {fields}.")
        self.env_id = env_id
        self.params = params_class(**options)

    @functools.cached_property
    def env(self):
        """The suite's env without auto-reset (built on first use: see the module docstring)."""
        # First use may be inside a jit trace (a step, or a space read by a traced policy):
        # craftax's modules would then build their jnp constants (and the pixel envs their
        # textures) as tracers of that trace, leaked into every later trace. Evaluated eagerly,
        # they are plain arrays.
        with jax.ensure_compile_time_eval():
            from craftax.craftax_env import make_craftax_env_from_name
            return make_craftax_env_from_name(self.env_id, auto_reset=False)

    @property
    def action_space(self):
        return _to_gymnasium(self.env.action_space(self.params))

    @property
    def observation_space(self):
        return _to_gymnasium(self.env.observation_space(self.params))

    def reset(self, key):
        obs, state = self.env.reset_env(key, self.params)
        # Classic's reset leaves player_direction a Python int (a weakly typed array once
        # jitted), unlike the step's state: a jitted step would be compiled twice (for the first
        # state and for the later ones). Every leaf becomes a strongly typed array.
        state = jax.tree.map(lambda x: jnp.asarray(x, jnp.asarray(x).dtype), state)
        return state, obs.astype(jnp.float32)

    def transition(self, key, state, action):
        obs, state, reward, _, info = self.env.step_env(key, state, action, self.params)
        terminated = self.env.is_terminal(state, self.params.replace(max_timesteps=_NO_LIMIT))
        time_up = state.timestep >= self.params.max_timesteps
        truncated = jnp.logical_and(time_up, jnp.logical_not(terminated))
        # The suite's info: "Achievements/<name>" (100 on a game's last step if it unlocked
        # it, else 0: "Achievements/<name>:max" is its unlock rate), "score" and "discount".
        return (state, obs.astype(jnp.float32), jnp.asarray(reward, jnp.float32),
                jnp.asarray(terminated, bool), truncated, dict(info))


def make(env_id: str, options: dict) -> CraftaxEnv:
    """The `RawEnv` for "craftax:<env_id>"; `options` override `EnvParams` fields."""
    if env_id not in ENV_IDS:
        raise ValueError(f"unknown craftax env {env_id!r}; allowed: "
                         f"{', '.join('craftax:' + name for name in ENV_IDS)}.")
    return CraftaxEnv(env_id, dict(options))
