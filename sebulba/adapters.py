"""Adapters that run Gymnasium and dm_env environments under the runtime's env API.

The runtime steps an env *batch* with the API of sebulba/envs.py (`num_envs`,
`observation_space`, `action_space` as gymnasium spaces of one env, `reset() -> obs`,
`step(action) -> TimeStep`, `close()`), and relies on EnvPool's one-step-late autoreset: the
step that ends an episode returns the real final observation; the next step is a *reset step*
that ignores its action and returns the first observation with reward 0 and
terminated = truncated = False. The split step `send`/`recv` of sebulba/envs.py is optional:
with `actor_overlap="on"` the actor steps an adapter's `step` in a helper thread
(sebulba/env_guard.py), which overlaps with the policy when the step releases the GIL (a
simulator in C, an AsyncVectorEnv waiting on its workers). The adapters below give every
source exactly the step semantics above:

- `GymnasiumVectorEnv(vector_env, seed)`: a `gymnasium.vector.VectorEnv` whose autoreset mode
  is NEXT_STEP (gymnasium >= 1.0's default), which already has these semantics;
  `gymnasium_env(make_one, num_envs, seed)` batches a single `gymnasium.Env` factory with a
  SyncVectorEnv; `gymnasium_make(id, ...)` does the same for a registered gymnasium id.
- `DmEnvBatch(envs)`: a list of `dm_env.Environment`s stepped in a loop. StepType.LAST with
  discount 0 is a termination, with discount > 0 a time-limit truncation (bootstrap); the
  adapter calls `reset()` itself on the reset step, so envs need not auto-reset.
- `as_runtime_env(obj, num_envs, seed, where)`: what `register_env` makers return goes through
  it: vector envs and lists of dm_env envs are wrapped, anything else must have the API; a
  missing piece is named in the error.

Observations may be arrays or dicts/tuples of arrays (multi-tensor); float64 leaves become
float32 (JAX computes in float32). Actions arrive as the policy produced them: an array with a
leading env axis, or a dict/tuple of such arrays for mixed action spaces.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from sebulba.timestep import TimeStep, to_float32

_API = ("num_envs", "observation_space", "action_space", "reset", "step", "close")


class GymnasiumVectorEnv:
    """A gymnasium VectorEnv (autoreset mode NEXT_STEP) with the runtime's env API."""

    def __init__(self, env: Any, seed: int) -> None:
        from gymnasium.vector import AutoresetMode
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if AutoresetMode(mode) is not AutoresetMode.NEXT_STEP:
            # SAME_STEP returns the first obs of the next episode on the ending step (the final
            # one hides in `info`) and DISABLED never resets: neither has the reset step the
            # actor and the losses rely on, so refuse rather than guess.
            raise ValueError(
                f"{type(env).__name__} uses autoreset_mode={AutoresetMode(mode).name}; the "
                f"runtime needs NEXT_STEP (the final obs on the ending step, then a reset step). "
                f"Build it with autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP.")
        self._env, self._seed = env, int(seed)
        self.num_envs = int(env.num_envs)
        self.observation_space = env.single_observation_space
        self.action_space = env.single_action_space

    def reset(self) -> Any:
        obs, _ = self._env.reset(seed=self._seed)  # env i gets seed + i
        return to_float32(obs)

    def step(self, action: Any) -> TimeStep:
        obs, reward, terminated, truncated, info = self._env.step(action)
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool) & ~terminated
        return TimeStep(to_float32(obs), np.asarray(reward, np.float32), terminated, truncated,
                        terminated | truncated, info)

    def render(self, env_id: int = 0) -> Any:
        return self._env.call("render")[env_id]

    @property
    def reads_progress(self) -> bool:
        """Whether an env of the batch runs a curriculum (host_scenarios.Randomized with a
        schedule, or an env of one's own declaring `reads_progress`): envs of a
        SyncVectorEnv, stepped in this process."""
        return any(getattr(e, "reads_progress", False) for e in getattr(self._env, "envs", ()))

    def set_progress(self, progress: Any) -> None:
        """Hands the training progress (podracer/curriculum.py) to each env that reads it."""
        for e in getattr(self._env, "envs", ()):
            if getattr(e, "reads_progress", False):
                e.set_progress(progress)

    def close(self) -> None:
        self._env.close()


def gymnasium_env(make_one: Callable[[], Any], num_envs: int, seed: int) -> GymnasiumVectorEnv:
    """`num_envs` copies of the gymnasium.Env that `make_one()` builds, stepped in one thread.

    For slow simulators, `env.workers=N` steps the batch in N worker processes
    (sebulba/env_workers.py).
    """
    from gymnasium.vector import AutoresetMode, SyncVectorEnv
    return GymnasiumVectorEnv(SyncVectorEnv([make_one] * num_envs,
                                            autoreset_mode=AutoresetMode.NEXT_STEP), seed)


def gymnasium_make(env_id: Any, num_envs: int, seed: int, randomize: str = "",
                   **kwargs: Any) -> GymnasiumVectorEnv:
    """A registered gymnasium id or EnvSpec (`gymnasium.make(env_id, **kwargs)`), batched;
    `randomize` (env.randomize): each env draws those attributes anew at every reset
    (sebulba/host_scenarios.py)."""
    import gymnasium
    if not randomize:
        return gymnasium_env(lambda: gymnasium.make(env_id, **kwargs), num_envs, seed)
    from sebulba import host_scenarios
    return gymnasium_env(lambda: host_scenarios.randomized(gymnasium.make(env_id, **kwargs),
                                                           randomize), num_envs, seed)


class DmEnvBatch:
    """dm_env environments stepped one after the other, with EnvPool's step semantics."""

    def __init__(self, envs: Sequence[Any]) -> None:
        if not envs:
            raise ValueError("DmEnvBatch needs at least one dm_env.Environment.")
        self._envs = list(envs)
        self.num_envs = len(self._envs)
        self._action_spec = self._envs[0].action_spec()
        self.observation_space = spec_to_space(self._envs[0].observation_spec())
        self.action_space = spec_to_space(self._action_spec)
        self._resetting = np.zeros(self.num_envs, bool)

    def reset(self) -> Any:
        self._resetting[:] = False
        return _stack([env.reset().observation for env in self._envs])

    def step(self, action: Any) -> TimeStep:
        n = self.num_envs
        reward = np.zeros(n, np.float32)
        terminated, truncated = np.zeros(n, bool), np.zeros(n, bool)
        obs = []
        for i, env in enumerate(self._envs):
            if self._resetting[i]:  # the reset step: the action is ignored, reward 0
                obs.append(env.reset().observation)
                continue
            ts = env.step(_cast(self._action_spec, _index(action, i)))
            obs.append(ts.observation)
            reward[i] = 0.0 if ts.reward is None else float(np.sum(ts.reward))
            if ts.last():
                # dm_env's convention: discount 0 at a terminal state, > 0 when cut by a limit.
                discount = 0.0 if ts.discount is None else float(np.mean(ts.discount))
                terminated[i], truncated[i] = discount == 0.0, discount != 0.0
        self._resetting = terminated | truncated
        return TimeStep(_stack(obs), reward, terminated, truncated, terminated | truncated)

    def close(self) -> None:
        for env in self._envs:
            env.close()


def dm_env_batch(make_one: Callable[[int], Any], num_envs: int, seed: int) -> DmEnvBatch:
    """`num_envs` dm_env environments `make_one(seed + i)` (dm_env has no seeding API)."""
    return DmEnvBatch([make_one(seed + i) for i in range(num_envs)])


def spec_to_space(spec: Any) -> Any:
    """A dm_env spec (or a dict/tuple of specs) as the gymnasium space the runtime expects.

    Integer specs bounded below by 0 become Discrete (scalar) or MultiDiscrete (1-D): that is
    how action heads are chosen (networks/distributions.from_space).
    """
    from dm_env import specs
    from gymnasium import spaces
    if isinstance(spec, dict):
        return spaces.Dict({k: spec_to_space(v) for k, v in spec.items()})
    if isinstance(spec, (tuple, list)):
        return spaces.Tuple([spec_to_space(v) for v in spec])
    if isinstance(spec, specs.DiscreteArray):
        return spaces.Discrete(int(spec.num_values))
    dtype = np.dtype(spec.dtype)
    shape = tuple(spec.shape)
    if isinstance(spec, specs.BoundedArray):
        low = np.broadcast_to(spec.minimum, shape)
        high = np.broadcast_to(spec.maximum, shape)
        if dtype.kind in "iu" and np.all(low == 0) and len(shape) <= 1:
            if not shape:
                return spaces.Discrete(int(high) + 1)
            return spaces.MultiDiscrete((high + 1).astype(np.int64))
    else:
        low = np.full(shape, -np.inf if dtype.kind == "f" else np.iinfo(dtype).min)
        high = np.full(shape, np.inf if dtype.kind == "f" else np.iinfo(dtype).max)
    box_dtype = np.float32 if dtype.kind == "f" else dtype
    return spaces.Box(low.astype(box_dtype), high.astype(box_dtype), shape, box_dtype)


def as_runtime_env(obj: Any, num_envs: int, seed: int, where: str) -> Any:
    """Wraps gymnasium vector envs and lists of dm_env envs; checks everything else has the
    runtime's env API, with an error naming what is missing."""
    import gymnasium
    if isinstance(obj, gymnasium.vector.VectorEnv):
        obj = GymnasiumVectorEnv(obj, seed)
    elif isinstance(obj, (list, tuple)) and obj and _is_dm_env(obj[0]):
        obj = DmEnvBatch(obj)
    elif isinstance(obj, gymnasium.Env) or _is_dm_env(obj):
        helper = "gymnasium_env" if isinstance(obj, gymnasium.Env) else "dm_env_batch"
        raise TypeError(f"{where} returned one {type(obj).__name__}, not a batch of {num_envs}; "
                        f"return sebulba.adapters.{helper}(make_one, num_envs, seed) instead.")
    missing = [a for a in _API if not hasattr(obj, a)]
    if missing:
        raise TypeError(f"{where} returned {type(obj).__name__}, which lacks {missing}; an env "
                        f"batch needs {list(_API)} (sebulba/envs.py), or return a gymnasium "
                        f"VectorEnv or a list of dm_env environments (sebulba/adapters.py).")
    for name in ("observation_space", "action_space"):
        if not isinstance(getattr(obj, name), gymnasium.spaces.Space):
            raise TypeError(f"{where}: {name} is {getattr(obj, name)!r}; it must be a "
                            f"gymnasium space of one env (see sebulba.adapters.spec_to_space).")
    if obj.num_envs != num_envs:
        raise ValueError(f"{where} returned a batch of num_envs={obj.num_envs}; the runtime "
                         f"asked for {num_envs}.")
    return obj


def _is_dm_env(obj: Any) -> bool:
    try:
        import dm_env
    except ImportError:  # dm_env is optional
        return False
    return isinstance(obj, dm_env.Environment)


def _stack(items: list) -> Any:
    """Per-env observations (arrays or dicts/tuples of arrays) -> one batch, float32."""
    first = items[0]
    if isinstance(first, dict):
        return {k: _stack([x[k] for x in items]) for k in first}
    if isinstance(first, (tuple, list)):
        return type(first)(_stack(list(x)) for x in zip(*items))
    return to_float32(np.stack([np.asarray(x) for x in items]))


def _index(action: Any, i: int) -> Any:
    if isinstance(action, dict):
        return {k: _index(v, i) for k, v in action.items()}
    if isinstance(action, (tuple, list)):
        return type(action)(_index(v, i) for v in action)
    return np.asarray(action)[i]


def _cast(spec: Any, action: Any) -> Any:
    """One env's action in the dtype of its spec (policies emit float32 / int32)."""
    if isinstance(spec, dict):
        return {k: _cast(s, action[k]) for k, s in spec.items()}
    if isinstance(spec, (tuple, list)):
        return type(spec)(_cast(s, a) for s, a in zip(spec, action))
    return np.asarray(action, dtype=spec.dtype)
