"""A JAX-native env as a host env batch with the sebulba/envs.py API (`reset() -> obs`,
`step(action) -> TimeStep`, numpy in and out): Sebulba's adapter for the envs Anakin runs on
the device, so the host-side machinery (actor threads, the evaluation game loop, scripts that
play games) runs on them unchanged.

The env is any object with Anakin's pure-function env API (anakin/envs.py: `reset(key) ->
state` with `state.obs`, `step(key, state, action) -> (state, step)` with the step's `obs`,
`reward`, `terminated`, `truncated`, and gymnasium `observation_space` / `action_space`); this
module reads those attributes and imports no runtime. Each call is one jitted, vmapped step of
`num_envs` envs, each with its own key stream; the episode semantics are the env's (EnvPool's,
one step late), so `TimeStep.episode_over` marks game ends; the step's info (a JAX env's
`Step.info`, the same structure every step) is the TimeStep's, and `info_fields` names its
scalar entries without stepping (what env.episode_metrics can reduce).
"""
from __future__ import annotations

import copy
from typing import Any

import jax
import numpy as np

from podracer.episode_metrics import jax_step_fields
from sebulba.envs import TimeStep


class HostEnv:
    """`num_envs` copies of the JAX env `env`, stepped from the host (see the module doc)."""

    def __init__(self, env, num_envs: int, seed: int) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs} must be >= 1.")
        self.env, self.num_envs = env, num_envs
        self.action_space, self.observation_space = env.action_space, env.observation_space
        self._keys = jax.random.split(jax.random.key(seed), num_envs)
        self._state: Any = None
        # A curriculum: the env's resets read the training progress (`set_progress`; None,
        # its schedule's end, until the runtime hands one).
        self.reads_progress = bool(getattr(env, "reads_progress", False))
        self._progress: Any = None
        reads = self.reads_progress

        def step(keys, state, action, progress):
            split = jax.vmap(lambda k: jax.random.split(k))(keys)
            one = (lambda k, st, a: env.step(k, st, a, progress)) if reads else env.step
            state, s = jax.vmap(one)(split[:, 1], state, action)
            return split[:, 0], state, s

        def reset(keys, progress):
            split = jax.vmap(lambda k: jax.random.split(k))(keys)
            one = (lambda k: env.reset(k, progress)) if reads else env.reset
            return split[:, 0], jax.vmap(one)(split[:, 1])

        self._step, self._reset = jax.jit(step), jax.jit(reset)

    @property
    def info_fields(self) -> tuple[str, ...]:
        """The dotted names of the scalar entries of one env's step info, from the step's
        abstract evaluation (nothing runs)."""
        return jax_step_fields(self.env, _one_action(self.action_space))

    def set_progress(self, progress: Any) -> None:
        """The training progress (podracer/curriculum.TrainingProgress) the next resets draw
        at."""
        means = progress.metrics
        self._progress = type(progress)(
            np.float32(progress.env_steps), np.int32(progress.updates),
            np.float32(progress.return_mean), np.int32(progress.games),
            None if means is None else {n: np.float32(v) for n, v in means.items()})

    def reset(self) -> Any:
        self._keys, self._state = self._reset(self._keys, self._progress)
        return jax.device_get(self._state.obs)

    def step(self, action) -> TimeStep:
        if self._state is None:
            raise RuntimeError("HostEnv.step before reset().")
        self._keys, self._state, s = self._step(self._keys, self._state, action,
                                                self._progress)
        s = jax.device_get(s)
        over = np.logical_or(s.terminated, s.truncated)
        return TimeStep(s.obs, np.asarray(s.reward, np.float32), np.asarray(s.terminated),
                        np.asarray(s.truncated), over, getattr(s, "info", None))

    def close(self) -> None:
        self._state = None


def _one_action(space: Any) -> Any:
    """One action of a gymnasium space, as shapes and dtypes (a copy's sample: the space's own
    random state is left as it was)."""
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype),
                        copy.deepcopy(space).sample())
