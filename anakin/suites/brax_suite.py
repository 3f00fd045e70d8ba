"""Brax (Google's JAX physics envs) as `RawEnv`s: names "brax:<env>" with <env> one of brax's
registered envs ("brax:ant", "brax:halfcheetah", "brax:hopper", "brax:humanoid",
"brax:inverted_pendulum", "brax:reacher", "brax:walker2d", ...).

Checked with brax 0.14.2, mujoco-mjx 3.17.0 and mujoco 4.0.0 on jax 0.10.2. The suite's
conventions and how they are mapped:

- No auto-reset, no time limit in the raw env: `brax.envs.get_environment(name, **kwargs)`
  gives an env with `reset(rng) -> State` and `step(State, action) -> State` (State fields:
  pipeline_state, obs, reward, done, metrics, info). The time limit (and brax's own
  auto-reset) live in the training wrappers that `brax.envs.create` adds (EpisodeWrapper,
  AutoResetWrapper); the adapter does not use them. It calls the raw env's reset and step
  directly, so the step that ends an episode returns its real final observation and
  `AutoReset` resets one step late. `step` takes no key (the envs are deterministic after
  their random reset): `transition` ignores its key.
- Termination vs time limit: the raw env's `done` (a float 0/1) is termination only (ant,
  hopper, humanoid, walker2d: leaving the healthy range unless `terminate_when_unhealthy` is
  False; the pendulums: falling over; halfcheetah, humanoidstandup, pusher, reacher, swimmer
  never terminate). The adapter counts steps itself and reports `truncated` at
  `episode_length` steps (option; default 1000, the `episode_length` of brax's training
  wrappers and of the MuJoCo tasks the envs copy). A step that terminates on the limit step
  is reported as terminated only, as brax's EpisodeWrapper does (`truncation = 1 - done`).
  (inverted_pendulum's `info['time_out']` is a copy of its `done`, not a time limit: unread.)
- NaNs: brax does not check for them (neither the envs nor its training wrappers), and a NaN
  height counts as healthy in ant / humanoid (the range checks compare false), so a state
  whose physics diverged would run on, NaN, until the time limit. The adapter passes states
  through unchanged (`AutoReset`'s reset then replaces them). None was seen here (halfcheetah,
  every backend, 6,144 random-action steps each).
- Observations: a float32 vector (d,) as a Box(-inf, inf). `fast` (brax's unit-test env) can
  give a dict (`obs_mode`): a Dict of float32 Boxes; it has no physics (options such as
  `backend` and `n_frames` are accepted and ignored by it).
- Actions: a float32 Box [-1, 1]^a, brax's convention (inverted_pendulum rescales it to its
  actuator's range; the physics clips controls to their ranges; the control costs see the
  action as given, as in brax, which does not clip).
- `backend` (option): brax's physics pipeline, one of "generalized", "positional", "spring",
  "mjx". Default "generalized", the env classes' own default (so "brax:ant" is what
  `brax.envs.get_environment("ant")` gives) and the brax pipeline that keeps the MuJoCo
  model's timestep and frame skip (halfcheetah: 0.01 s x 5, as HalfCheetah-v4).
  Measured here (2-core CPU loaded by other runs; halfcheetah, 64 envs, random actions):
  generalized 744 steps/s (compile 129 s wall), spring 2,651 (84 s), positional 533 (147 s),
  mjx 229 (185 s); inverted_pendulum's reset + step compile took 11.6 s of CPU (generalized),
  9.5 (spring), 12.6 (positional), 24.4 (mjx). "spring" is the fast choice on CPU, but it
  changes the physics (halfcheetah: a 0.003125 s timestep x 16 frames and other gears), and
  "mjx" (MuJoCo itself) is the slowest on CPU. Returns are comparable only within a backend.

Other options are the env class's constructor arguments (e.g. ant's `ctrl_cost_weight`,
`terminate_when_unhealthy`, `healthy_z_range`, `reset_noise_scale`) and PipelineEnv's
`n_frames` (physics steps per env step) and `debug`. Constructing a brax env loads its
MJCF model into jax arrays (this starts JAX's backend), so the env is built on first use: a
config check can `make` one before a multi-host job joins.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from anakin.suites import refuse_unknown_options

BACKENDS = ("generalized", "positional", "spring", "mjx")
DEFAULT_BACKEND = "generalized"     # why: the module docstring ("backend")
DEFAULT_EPISODE_LENGTH = 1000       # brax.envs.create's / brax training's default
ADAPTER_OPTIONS = ("backend", "episode_length")
PIPELINE_OPTIONS = ("n_frames", "debug")  # PipelineEnv's, passed on by every env class


class BraxState(NamedTuple):
    """The brax env's State and the steps taken since its reset."""

    inner: Any
    t: jax.Array


def registered() -> dict[str, type]:
    """brax's env registry (name -> env class); brax has no public accessor for it."""
    from brax import envs
    return dict(envs._envs)


def _constructor_options(cls: type) -> list[str]:
    """The keyword arguments an env class accepts (its own and PipelineEnv's), for checking
    options before anything is built."""
    params = inspect.signature(cls.__init__).parameters
    own = [n for n, p in params.items() if n not in ("self", "backend")
           and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    return sorted(set(own) | set(PIPELINE_OPTIONS))


def _box(shape, dtype=np.float32, low=-np.inf, high=np.inf):
    from gymnasium import spaces
    return spaces.Box(low, high, tuple(shape), dtype=dtype)


class BraxEnv:
    """A brax env (brax.envs.get_environment) as a `RawEnv`: see the module docstring."""

    def __init__(self, env_id: str, backend: str, episode_length: int,
                 kwargs: dict[str, Any]) -> None:
        self.env_id, self.backend = env_id, backend
        self.episode_length, self.kwargs = episode_length, kwargs

    @functools.cached_property
    def env(self):
        """The brax env itself, built on first use (see the module docstring)."""
        from brax import envs
        # First use may be inside a trace (jit(vmap(env.reset))): the model's arrays must be
        # concrete constants, not tracers of that trace.
        with jax.ensure_compile_time_eval():
            return envs.get_environment(self.env_id, backend=self.backend, **self.kwargs)

    @functools.cached_property
    def observation_space(self):
        from gymnasium import spaces
        # Traced, not run: the shapes without compiling a reset.
        obs = jax.eval_shape(self.env.reset, jax.random.key(0)).obs
        if isinstance(obs, dict):
            return spaces.Dict({k: _box(v.shape) for k, v in obs.items()})
        return _box(obs.shape)

    @functools.cached_property
    def action_space(self):
        return _box((self.env.action_size,), low=-1.0, high=1.0)

    def reset(self, key):
        state = self.env.reset(key)
        return BraxState(state, jnp.zeros((), jnp.int32)), _float32(state.obs)

    def transition(self, key, state, action):
        del key  # brax's step is deterministic
        inner = self.env.step(state.inner, action)
        t = state.t + 1
        terminated = jnp.asarray(inner.done) > 0
        truncated = jnp.logical_and(t >= self.episode_length, ~terminated)
        # brax's per-step metrics (the reward's terms, positions, velocities): info "metrics.*"
        info = {"metrics": {k: jnp.asarray(v, jnp.float32) for k, v in inner.metrics.items()}}
        return (BraxState(inner, t), _float32(inner.obs),
                jnp.asarray(inner.reward, jnp.float32), terminated, truncated, info)


def _float32(obs):
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), obs)


def make(env_id: str, options: dict) -> BraxEnv:
    """The `RawEnv` for "brax:<env_id>"; options: `backend`, `episode_length` and the env
    class's constructor arguments (ValueError naming the allowed ones otherwise)."""
    envs = registered()
    if env_id not in envs:
        raise ValueError(f"unknown brax env {env_id!r}; registered: "
                         f"{', '.join(sorted(envs))} (as brax:<env>).")
    options = dict(options)
    backend = options.pop("backend", DEFAULT_BACKEND)
    if backend not in BACKENDS:
        raise ValueError(f"brax:{env_id}: unknown backend {backend!r}; allowed: "
                         f"{', '.join(BACKENDS)}.")
    episode_length = options.pop("episode_length", DEFAULT_EPISODE_LENGTH)
    if isinstance(episode_length, bool) or not isinstance(episode_length, (int, np.integer)) \
            or episode_length < 1:
        raise ValueError(f"brax:{env_id}: episode_length must be an int >= 1; got "
                         f"{episode_length!r}.")
    allowed = _constructor_options(envs[env_id])
    refuse_unknown_options(f"brax:{env_id}", options, allowed,
                           shown=ADAPTER_OPTIONS + tuple(allowed))
    return BraxEnv(env_id, backend, int(episode_length), options)
