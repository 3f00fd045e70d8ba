"""JAX-native environments for the Anakin runtime, with Sebulba's (EnvPool's) episode semantics.

The runtime steps one environment through pure functions and `vmap`s them over its envs:

    env.reset(key) -> state                       (state.obs is the first observation)
    env.step(key, state, action) -> (state, Step) (Step: what the env answered)

(both also take the training progress, handed on to an env that reads it: a curriculum).

`AutoReset` gives any `RawEnv` (reset / transition without auto-reset) EnvPool's convention,
so the shared losses, returns and recurrent-core code apply unchanged (podracer/agent.py):
- the step that ends an episode returns the real final observation with its reward and
  `terminated` (a natural end: no bootstrap) or `truncated` (a time limit: bootstrap from the
  value of that final observation);
- the NEXT step is a "reset step": the env resets, ignores the action, returns the new
  episode's first observation with reward 0, not terminated, not truncated, and `valid` False.
gymnax's own `step` resets in the same step (and returns the new episode's first observation
instead of the final one); `GymnaxEnv` therefore calls its `step_env` / `reset_env` and lets
`AutoReset` reset one step late.

Names: "gymnax:<id>" (or a bare gymnax id such as "CartPole-v1"), the other suites'
"<prefix>:<id>" (anakin/suites: brax, jumanji, craftax, navix, xminigrid, pgx; optional extras)
and whatever `register_env(name, factory)` adds (factory(options) -> RawEnv).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from anakin import suites
from podracer import scenarios
from podracer.episode_metrics import jax_step_fields
from podracer.registry import Registry
from podracer.curriculum import TrainingProgress

PyTree = Any


class Step(NamedTuple):
    """One env's answer to one action (leaves get a leading env axis under vmap)."""

    obs: PyTree              # observation after the step (the final one when an episode ended)
    reward: jax.Array        # float32; 0 on a reset step
    terminated: jax.Array    # bool: the episode ended in a terminal state (no bootstrap)
    truncated: jax.Array     # bool: the episode was cut by a time limit (bootstrap)
    valid: jax.Array         # bool: False on a reset step (the action was ignored)
    info: PyTree = None      # dict: what the env reports beside the reward (per-env scalars
                             # such as a crash flag or reward terms; env.episode_metrics)

    @property
    def episode_over(self) -> jax.Array:
        return jnp.logical_or(self.terminated, self.truncated)


class RawEnv(Protocol):
    """A JAX-native env without auto-reset (what an adapter provides; one env, pure functions).

    `transition` returns (inner state, obs, reward, terminated, truncated) and may add a sixth
    entry, `info`: a dict (nested dicts allowed) of what the env reports beside the reward, of
    one structure at every step, whose scalar entries env.episode_metrics can reduce over each
    game (anakin/episode_metrics.py); a time limit is reported as `truncated`.
    `observation_space` / `action_space` are gymnasium spaces (the networks pick their heads
    from them). An env that runs a curriculum of its own declares `reads_progress = True`
    and takes `reset(key, progress)`: the training progress at that reset
    (podracer/curriculum.TrainingProgress; None in an evaluation)."""

    observation_space: Any
    action_space: Any

    def reset(self, key: jax.Array) -> tuple[PyTree, PyTree]: ...

    def transition(self, key: jax.Array, state: PyTree, action: PyTree
                   ) -> tuple[Any, ...]: ...


class EnvState(NamedTuple):
    inner: PyTree        # the raw env's state
    obs: PyTree          # the observation the agent sees next
    done: jax.Array      # the last step ended an episode: the next step is a reset step


class AutoReset:
    """EnvPool's one-step-late auto-reset around a `RawEnv` (see the module docstring)."""

    def __init__(self, raw: RawEnv) -> None:
        self.raw = raw

    @property
    def observation_space(self):
        return self.raw.observation_space

    @property
    def action_space(self):
        return self.raw.action_space

    @property
    def reads_progress(self) -> bool:
        """Whether the raw env's reset reads the training progress (a curriculum): it then
        declares `reads_progress = True` and takes `reset(key, progress)`."""
        return bool(getattr(self.raw, "reads_progress", False))

    def _raw_reset(self, key, progress):
        return self.raw.reset(key, progress) if self.reads_progress else self.raw.reset(key)

    def reset(self, key: jax.Array, progress: TrainingProgress | None = None) -> EnvState:
        """A fresh env; `progress` (podracer/curriculum.py) reaches an env that reads it (None:
        a schedule's end)."""
        inner, obs = self._raw_reset(key, progress)
        return EnvState(inner, obs, jnp.zeros((), bool))

    def step(self, key: jax.Array, state: EnvState, action: PyTree,
             progress: TrainingProgress | None = None) -> tuple[EnvState, Step]:
        k_step, k_reset = jax.random.split(key)
        inner, obs, reward, terminated, truncated, *info = self.raw.transition(
            k_step, state.inner, action)
        # Both branches are computed and one is selected: under vmap a `cond` would be a
        # select anyway, and a branch-free step keeps every env in lockstep.
        r_inner, r_obs = self._raw_reset(k_reset, progress)
        reset = state.done

        def pick(a, b):
            return jnp.where(reset, a, b)

        inner = jax.tree.map(pick, r_inner, inner)
        obs = jax.tree.map(pick, r_obs, obs)
        reward = jnp.where(reset, 0.0, jnp.asarray(reward, jnp.float32))
        terminated = jnp.logical_and(~reset, jnp.asarray(terminated, bool))
        truncated = jnp.logical_and(~reset, jnp.asarray(truncated, bool))
        # A reset step's info is the discarded transition's: no metric reads it (not valid).
        step = Step(obs, reward, terminated, truncated, ~reset, dict(info[0]) if info else {})
        return EnvState(inner, obs, jnp.logical_or(terminated, truncated)), step


def to_gymnasium_space(space: Any) -> Any:
    """A gymnax space as the gymnasium space the networks read (networks.from_space)."""
    from gymnasium import spaces as gs
    from gymnax.environments import spaces as xs
    if isinstance(space, xs.Discrete):
        return gs.Discrete(int(space.n))
    if isinstance(space, xs.Box):
        shape = tuple(space.shape)
        low = np.broadcast_to(np.asarray(space.low, np.float64), shape)
        high = np.broadcast_to(np.asarray(space.high, np.float64), shape)
        return gs.Box(low.astype(space.dtype), high.astype(space.dtype), shape,
                      dtype=np.dtype(space.dtype))
    if isinstance(space, xs.Dict):
        return gs.Dict({k: to_gymnasium_space(v) for k, v in space.spaces.items()})
    if isinstance(space, xs.Tuple):
        return gs.Tuple(tuple(to_gymnasium_space(s) for s in space.spaces))
    raise ValueError(f"gymnax space {space!r} has no gymnasium equivalent here; supported: "
                     f"Discrete, Box, Dict, Tuple.")


class GymnaxEnv:
    """A gymnax environment as a `RawEnv`: its `step_env` (no auto-reset; terminated) and
    `is_truncated` (the time limit, `max_steps_in_episode`) for `transition`, `reset_env` for
    `reset`. `options` override fields of the env's default `EnvParams`.

    `randomize` (env.randomize, podracer/scenarios.py) names EnvParams fields that each env
    draws anew at every reset: the drawn `EnvParams` are part of the env's state (an episode
    keeps its scenario) and each step's info reports them under `scenario` (so that
    env.episode_metrics can log them, e.g. `scenario.length:last`). A scheduled draw (a
    curriculum) reads the training progress its reset is given."""

    def __init__(self, env_id: str, options: dict | None = None,
                 randomize: str = "") -> None:
        import gymnax
        try:
            self.env, params = gymnax.make(env_id)
        except (ValueError, KeyError) as e:
            raise ValueError(f"unknown gymnax env {env_id!r} ({e}); registered: "
                             f"{', '.join(gymnax.registered_envs)}.") from None
        options = dict(options or {})
        unknown = sorted(set(options) - set(params.__dataclass_fields__))
        if unknown:
            raise ValueError(f"gymnax {env_id}: unknown EnvParams field(s) {unknown}; allowed: "
                             f"{sorted(params.__dataclass_fields__)}.")
        derived = scenarios.DERIVED.get(env_id)
        fixed = sorted(set(options) & set(derived.fields)) if derived else []
        if fixed:
            raise ValueError(f"gymnax {env_id}: {fixed} follow from other fields "
                             f"({derived.rule}); set those instead.")
        self._derive = ((lambda p: p.replace(**derived.recompute(p))) if derived
                        else (lambda p: p))
        self.params = self._derive(params.replace(**options)) if options else params
        self.env_id = env_id
        self.draws = scenarios.parse(randomize)
        fields = params.__dataclass_fields__
        scenarios.check_fields(
            self.draws, [f for f in fields if f != "max_steps_in_episode"
                         and f not in (derived.fields if derived else ())],
            f"env.randomize on gymnax {env_id}")
        for d in self.draws:
            if d.kind == "function":
                scenarios.resolve(d)  # a missing user function fails before anything compiles
        # A curriculum: the draws at a reset follow the training progress (AutoReset hands it).
        self.reads_progress = bool(scenarios.scheduled(self.draws))

    # Built on first use: gymnax builds its spaces from jnp arrays, and the config check makes
    # an env before a multi-host run joins its job (no JAX backend may start before that).
    @property
    def action_space(self):
        return to_gymnasium_space(self.env.action_space(self.params))

    @property
    def observation_space(self):
        return to_gymnasium_space(self.env.observation_space(self.params))

    def reset(self, key, progress: TrainingProgress | None = None):
        if not self.draws:
            obs, state = self.env.reset_env(key, self.params)
            return state, obs
        key, k_draw = jax.random.split(key)
        params = self._derive(self.params.replace(**scenarios.draw(
            self.draws, k_draw, {d.field: getattr(self.params, d.field) for d in self.draws},
            progress)))
        obs, state = self.env.reset_env(key, params)
        return (state, params), obs

    def transition(self, key, state, action):
        if not self.draws:
            obs, state, reward, terminated, info = self.env.step_env(key, state, action,
                                                                     self.params)
            truncated = self.env.is_truncated(state, self.params)
            return state, obs, reward, terminated, truncated, info
        state, params = state
        obs, state, reward, terminated, info = self.env.step_env(key, state, action, params)
        truncated = self.env.is_truncated(state, params)
        info = {**info, "scenario": {d.field: getattr(params, d.field) for d in self.draws}}
        return (state, params), obs, reward, terminated, truncated, info


GYMNAX_PREFIX = "gymnax:"


def _check_factory(name: str, factory: Any) -> None:
    if not callable(factory):
        raise TypeError(f"factory for {name!r} must be callable (options) -> RawEnv; got "
                        f"{factory!r}.")


ENVS: Registry[Callable[[dict], RawEnv]] = Registry(
    "JAX-native env", how="anakin.envs.register_env", check=_check_factory)


def register_env(name: str, factory: Callable[[dict], RawEnv], *,
                 overwrite: bool = False) -> None:
    """Makes `name` a JAX-native env for the Anakin runtime: factory(options) -> RawEnv.
    Re-registering a name needs overwrite=True (podracer.registry.Registry's rules)."""
    ENVS.register(name, factory, overwrite=overwrite)


def names_a_jax_env(name: str) -> bool:
    """Whether `name` names a JAX-native env by itself: registered here, or "gymnax:<id>" (a
    bare gymnax id such as "CartPole-v1" is also an EnvPool id: only Anakin reads it as
    gymnax's). No import of gymnax: safe before a multi-host join."""
    return (name in ENVS or name.startswith(GYMNAX_PREFIX)
            or suites.split_name(name) is not None)


def make_env(name: str, options: dict | None = None, randomize: str = "") -> AutoReset:
    """The env called `name` with EnvPool's episode semantics (`AutoReset`); `randomize`
    (env.randomize) varies gymnax EnvParams per env and reset (GymnaxEnv)."""
    factory = ENVS.find(name)
    if randomize and (factory is not None or suites.split_name(name) is not None):
        raise ValueError(f"env.randomize={randomize!r}: randomised scenarios vary gymnax "
                         f"EnvParams fields (gymnax:<id>); {name!r} has no parameters the "
                         f"runtime can draw per env.")
    if factory is not None:
        return AutoReset(factory(dict(options or {})))
    if suites.split_name(name) is not None:
        return AutoReset(suites.make_raw(name, options))
    env_id = name[len(GYMNAX_PREFIX):] if name.startswith(GYMNAX_PREFIX) else name
    try:
        import gymnax
    except ImportError as e:  # pragma: no cover - gymnax is in requirements.txt
        raise ValueError(f"env {name!r} needs gymnax ({e}); pip install gymnax==1.0.1") from None
    if env_id not in gymnax.registered_envs:
        raise ValueError(f"{name!r} is not a JAX-native env for the Anakin runtime; "
                         f"allowed: gymnax:<id> with <id> one of "
                         f"{', '.join(gymnax.registered_envs)}; <suite>:<id> with <suite> one "
                         f"of {', '.join(suites.SUITES)} (docs/anakin.md); or a name registered with "
                         f"anakin.envs.register_env ({', '.join(ENVS.names()) or 'none'}).")
    return AutoReset(GymnaxEnv(env_id, options, randomize))


def info_fields(env) -> tuple[str, ...]:
    """The dotted names of the scalar entries of the info an env's step reports (what
    env.episode_metrics can name), from the step's abstract evaluation: nothing runs."""
    action = jax.eval_shape(lambda k: jax.tree.map(lambda a: a[0], uniform_actions(
        env.action_space, k, 1)), jax.random.key(0))
    return jax_step_fields(env, action)


def uniform_actions(space, key: jax.Array, n: int) -> PyTree:
    """`n` actions drawn uniformly from a gymnasium space (Discrete, MultiDiscrete, bounded
    Box, Dict or Tuple of those), as a batch on the leading axis: a uniformly random policy,
    whose return is the baseline of a normalised score (scripts/random_scores.py)."""
    from gymnasium import spaces
    if isinstance(space, spaces.Discrete):
        return jax.random.randint(key, (n,), int(space.start), int(space.start + space.n))
    if isinstance(space, spaces.MultiDiscrete):
        nvec = jnp.asarray(space.nvec)
        return jax.random.randint(key, (n, *nvec.shape), 0, nvec)
    if isinstance(space, spaces.Box):
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise TypeError(f"no uniform sampler for an unbounded Box: {space}")
        return jax.random.uniform(key, (n, *space.shape), minval=jnp.asarray(space.low),
                                  maxval=jnp.asarray(space.high))
    if isinstance(space, spaces.Dict):
        keys = jax.random.split(key, len(space.spaces))
        return {k: uniform_actions(s, kk, n) for (k, s), kk in zip(space.spaces.items(), keys)}
    if isinstance(space, spaces.Tuple):
        keys = jax.random.split(key, len(space.spaces))
        return tuple(uniform_actions(s, kk, n) for s, kk in zip(space.spaces, keys))
    raise TypeError(f"no uniform sampler for {space}")
