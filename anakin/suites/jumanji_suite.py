"""Jumanji (InstaDeep's JAX envs) as `RawEnv`s: names "jumanji:<id>" with <id> a registered
jumanji id ("jumanji:Snake-v1", "jumanji:Game2048-v1", "jumanji:Maze-v0", ...).

Checked with jumanji 1.1.2 on jax 0.10.2. The suite's conventions and how they are mapped:

- No auto-reset: `env.reset(key) -> (state, timestep)` and `env.step(state, action) ->
  (state, timestep)` with a dm_env-style TimeStep (step_type FIRST / MID / LAST, reward,
  discount). The adapter calls both directly (jumanji's AutoResetWrapper is not used), so the
  step that ends an episode returns its real final observation and `AutoReset` resets one step
  late. The env's randomness is the PRNG key it keeps in its own state (seeded by `reset`):
  `transition` ignores its key.
- Termination vs time limit: jumanji marks an episode end with step_type LAST, and most of its
  envs report their own time limit (`time_limit`, steps since reset) as a *termination*
  (discount 0: Snake, Maze, Tetris, Cleaner, PacMan, RobotWarehouse, RubiksCube, ...); only a
  few use discount 1 for it. The adapter counts steps itself and reports LAST as `truncated`
  when the discount is > 0 or the step count has reached the env's `time_limit`, and as
  `terminated` otherwise. Known blind spot: a natural end on exactly the time-limit step is
  indistinguishable from the cut there and is reported as truncated.
- Envs without a time limit (Game2048, TSP, Knapsack, Sudoku, ...) get the adapter's option
  `max_steps` (default 10_000): Game2048 ignores an invalid move (the board stays as it is), so
  without it a policy that keeps choosing one would never end its episode. `max_steps` also
  applies to envs with a time limit (default: none beyond theirs; their own `time_limit`
  option also moves the bounds of their step_count observation).
- Observations are NamedTuples / dataclasses, some nested (Maze's agent_position.row/col):
  each array leaf becomes one entry of a gymnasium Dict of float32 Boxes, keyed by its dotted
  path ("grid", "action_mask", "agent_position.row"). bool leaves become 0/1 and integer leaves
  their value as float32 (no rescaling: Snake's step_count reaches its time limit); scalar
  leaves get shape (1,). Bounds are the spec's (DiscreteArray: [0, n-1]; unbounded: +-inf);
  a few envs step outside their own specs (TSP's position is -1 at reset, Snake's step_count
  reaches time_limit on the last step), so the Boxes are descriptive, not enforced.
  The `action_mask` entry masks the policy (env.action_mask_key "auto": networks/
  distributions.py), so an agent plays legal actions only; with the key "" it is one more
  input, and an invalid action has whatever effect the env gives it (Snake dies, Game2048
  no-ops).
- Actions: DiscreteArray -> Discrete(n); MultiDiscreteArray -> MultiDiscrete (flattened to
  1-D if the spec has more axes); an integer BoundedArray -> MultiDiscrete(max - min + 1)
  (shifted by its minimum); a float BoundedArray -> 1-D float32 Box (reshaped back). Any
  other action spec (unbounded, nested) is a ValueError.
- Rewards: scalar float; envs with one reward per agent (LevelBasedForaging, Connector,
  SearchAndRescue) are refused (the runtime takes one scalar reward per env).

Other options are the env class's constructor arguments (e.g. Snake's num_rows, num_cols,
time_limit; Game2048's board_size). Ids that do not work here: Sokoban-v0 downloads its level
set from the Hugging Face Hub when made (fails offline); the per-agent-reward envs above.
Constructing a jumanji env builds its specs from jax arrays (this starts JAX's backend), as
importing gymnax does; the runtime makes the env after a multi-host join.
"""
from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from anakin.suites import refuse_unknown_options

ADAPTER_OPTIONS = ("max_steps",)
DEFAULT_MAX_STEPS = 10_000  # for envs without a time limit of their own


class JumanjiState(NamedTuple):
    """The jumanji env's state and the steps taken since its reset."""

    inner: Any
    t: jax.Array


def _leaves(spec, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, array spec) for every array leaf of a (nested) jumanji observation spec,
    in the spec's field order."""
    from jumanji import specs
    if isinstance(spec, specs.Array):
        return [(prefix, spec)]
    out = []
    for name, sub in vars(spec).items():
        if isinstance(sub, specs.Spec):
            out += _leaves(sub, f"{prefix}.{name}" if prefix else name)
    return out


def _box(spec) -> Any:
    """The float32 Box of one observation leaf (scalars get shape (1,))."""
    from gymnasium import spaces
    from jumanji import specs
    shape = tuple(spec.shape) or (1,)
    if isinstance(spec, specs.BoundedArray):
        low = np.broadcast_to(np.asarray(spec.minimum, np.float32), shape)
        high = np.broadcast_to(np.asarray(spec.maximum, np.float32), shape)
    else:
        low, high = np.full(shape, -np.inf, np.float32), np.full(shape, np.inf, np.float32)
    return spaces.Box(low, high, shape, np.float32)


def _action_space(spec, env_id: str) -> tuple[Any, Any]:
    """(gymnasium space, function from the space's action to jumanji's) for an action spec."""
    from gymnasium import spaces
    from jumanji import specs
    shape = tuple(spec.shape) if isinstance(spec, specs.Array) else None
    if isinstance(spec, specs.DiscreteArray):
        return spaces.Discrete(int(spec.num_values)), lambda a: jnp.asarray(a, spec.dtype)
    if isinstance(spec, specs.MultiDiscreteArray):
        nvec = np.asarray(spec.num_values).reshape(-1)
        return (spaces.MultiDiscrete(nvec),
                lambda a: jnp.asarray(a, spec.dtype).reshape(shape))
    if isinstance(spec, specs.BoundedArray) and np.issubdtype(spec.dtype, np.integer):
        low = np.broadcast_to(np.asarray(spec.minimum), shape).reshape(-1)
        high = np.broadcast_to(np.asarray(spec.maximum), shape).reshape(-1)
        return (spaces.MultiDiscrete(high - low + 1),
                lambda a: (jnp.asarray(a) + low).astype(spec.dtype).reshape(shape))
    if isinstance(spec, specs.BoundedArray) and np.issubdtype(spec.dtype, np.floating):
        low = np.broadcast_to(np.asarray(spec.minimum, np.float32), shape).reshape(-1)
        high = np.broadcast_to(np.asarray(spec.maximum, np.float32), shape).reshape(-1)
        return (spaces.Box(low, high, low.shape, np.float32),
                lambda a: jnp.asarray(a, spec.dtype).reshape(shape))
    raise ValueError(f"jumanji:{env_id}: action spec {spec!r} is not supported; supported: "
                     f"DiscreteArray, MultiDiscreteArray, bounded integer or float arrays.")


class JumanjiEnv:
    """A jumanji env as a `RawEnv` (the module docstring has the mapping)."""

    def __init__(self, env_id: str, options: dict) -> None:
        import jumanji
        options = dict(options)
        max_steps = options.pop("max_steps", None)
        registered = sorted(jumanji.registered_environments())
        if env_id not in registered:
            raise ValueError(f"unknown jumanji env {env_id!r}; registered: "
                             f"{', '.join(registered)}.")
        env = jumanji.make(env_id)
        allowed = [p for p in inspect.signature(type(env).__init__).parameters if p != "self"]
        refuse_unknown_options(f"jumanji:{env_id}", options, allowed,
                               shown=sorted(allowed + list(ADAPTER_OPTIONS)))
        if options:
            env = jumanji.make(env_id, **options)
        if tuple(env.reward_spec.shape) != ():
            raise ValueError(f"jumanji:{env_id} gives one reward per agent (shape "
                             f"{tuple(env.reward_spec.shape)}); this adapter takes envs with "
                             f"one scalar reward.")
        self.env, self.env_id = env, env_id
        limit = getattr(env, "time_limit", None)
        self.time_limit = int(limit) if isinstance(limit, (int, np.integer)) else None
        if max_steps is None:
            max_steps = None if self.time_limit is not None else DEFAULT_MAX_STEPS
        elif not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise ValueError(f"jumanji:{env_id}: max_steps={max_steps!r} must be a positive "
                             f"integer.")
        self.max_steps = max_steps
        self.action_space, self._to_action = _action_space(env.action_spec, env_id)
        self._obs_leaves = _leaves(env.observation_spec)

    @property
    def observation_space(self):
        """A Dict of float32 Boxes, one per observation leaf (dotted paths as keys)."""
        from gymnasium import spaces
        return spaces.Dict({path: _box(spec) for path, spec in self._obs_leaves})

    def _obs(self, observation) -> dict[str, jax.Array]:
        out = {}
        for path, spec in self._obs_leaves:
            value = observation
            for name in path.split("."):
                value = getattr(value, name)
            out[path] = jnp.asarray(value, jnp.float32).reshape(tuple(spec.shape) or (1,))
        return out

    def reset(self, key):
        """jumanji's reset: (state, first observation)."""
        inner, timestep = self.env.reset(key)
        return JumanjiState(inner, jnp.zeros((), jnp.int32)), self._obs(timestep.observation)

    def transition(self, key, state, action):
        """jumanji's step, its LAST step split into terminated / truncated."""
        del key  # the env draws from the key in its own state
        inner, timestep = self.env.step(state.inner, self._to_action(action))
        t = state.t + 1
        last = timestep.last()
        # jumanji's own time limit mostly comes as discount 0 (a "termination"): the step
        # count tells it apart (module docstring).
        cut_by_env = timestep.discount > 0
        if self.time_limit is not None:
            cut_by_env = cut_by_env | (t >= self.time_limit)
        terminated = last & ~cut_by_env
        # The adapter's own limit: a natural end on that step stays a termination.
        cut = last if self.max_steps is None else last | (t >= self.max_steps)
        truncated = cut & ~terminated
        reward = jnp.asarray(timestep.reward, jnp.float32)
        # The step's extras (env metrics, e.g. an invalid action's flag): info "extras.*".
        return (JumanjiState(inner, t), self._obs(timestep.observation), reward,
                jnp.asarray(terminated, bool), jnp.asarray(truncated, bool),
                {"extras": dict(timestep.extras or {})})


def make(env_id: str, options: dict) -> JumanjiEnv:
    """The `RawEnv` of jumanji's `env_id`; `options`: the env's constructor arguments and
    `max_steps` (module docstring). ValueError naming an unknown id or option."""
    return JumanjiEnv(env_id, options)
