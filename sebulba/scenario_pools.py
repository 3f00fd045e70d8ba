"""Randomised scenarios for EnvPool ids: an env batch split into pools of different scenarios.

An EnvPool pool fixes its options when it is built (traffic density, vehicle count, a MuJoCo
cost weight), so env.randomize cannot redraw them at each reset. `ScenarioPools` splits a
batch of N envs into `env.scenario_pools` contiguous pools, draws each pool's options once from
env.randomize (host_scenarios.Sampler, seeded with the seed of the pool's first env) and builds
it with them; envs keep their seeds (env i: seed + i), steps go to every pool (`send`/`recv`
too, so the actor's half-pool overlap runs on it) and come back joined along the env axis,
with each env's scenario in `info["scenario"]`. A fault rebuilds the batch and so draws anew.

`variable_options(name)` is what a pool can vary: the numeric options of the id's EnvPool
config, less the batch's own settings (sizes, seeds, threads), the time limit and rendering.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import numpy as np

from podracer import scenarios
from sebulba.env_workers import concat, merge_info, split
from sebulba.host_scenarios import Sampler
from sebulba.timestep import TimeStep

_NOT_SCENARIO = ("num_envs", "batch_size", "num_threads", "max_num_players",
                 "thread_affinity_offset", "seed", "max_episode_steps", "reward_threshold",
                 "screen_width", "screen_height", "centering_position_x",
                 "centering_position_y", "scaling", "img_height", "img_width", "stack_num",
                 "frame_skip", "noop_max")


def variable_options(name: str) -> dict[str, Any]:
    """{option: default} of what env.randomize can vary on EnvPool id `name`."""
    import envpool
    config = envpool.make_spec(name).config._asdict()
    return {k: v for k, v in config.items() if k not in _NOT_SCENARIO
            and isinstance(v, (int, float)) and not isinstance(v, bool)}


def check(cfg: Any) -> dict[str, Any]:
    """The options EnvPool id cfg.name can vary, with their defaults; ValueError naming a
    field of cfg.randomize it cannot vary, and those it can."""
    defaults = variable_options(cfg.name)
    draws = scenarios.parse(cfg.randomize)
    scenarios.check_fields(draws, tuple(defaults), f"env.randomize on EnvPool {cfg.name}")
    moved = scenarios.scheduled(draws)
    if moved:
        raise ValueError(f"env.randomize on EnvPool {cfg.name}: {moved[0].describe()} is a "
                         f"schedule, but a pool fixes its options when it is built (drawn "
                         f"once per pool): give a fixed distribution.")
    return defaults


class ScenarioPools:
    """`num_envs` envs of an EnvPool id in pools of drawn options (module docstring)."""

    def __init__(self, cfg: Any, num_envs: int, seed: int,
                 make_pool: Callable[[Any, int, int], Any]) -> None:
        """`make_pool(cfg, num_envs, seed)` builds one EnvPool batch (sebulba.envs.EnvPoolEnv)."""
        defaults = check(cfg)
        draws = scenarios.parse(cfg.randomize)
        self._slices = split(num_envs, min(cfg.scenario_pools, num_envs))
        self._pools: list = []
        self.scenarios: list[dict[str, Any]] = []  # each pool's drawn options
        try:
            for lo, hi in self._slices:
                drawn = Sampler(draws, seed + lo).draw({d.field: defaults[d.field]
                                                        for d in draws})
                pool_cfg = dataclasses.replace(cfg, randomize="",
                                               options={**cfg.options, **drawn})
                self._pools.append(make_pool(pool_cfg, hi - lo, seed + lo))
                self.scenarios.append(drawn)
        except BaseException:
            self.close()
            raise
        self.num_envs = num_envs
        first = self._pools[0]
        for pool, drawn in zip(self._pools, self.scenarios):
            if (pool.observation_space, pool.action_space) != (first.observation_space,
                                                               first.action_space):
                self.close()
                raise ValueError(f"env.randomize={cfg.randomize!r}: the pools drew options "
                                 f"that change the observation or action space ({drawn} vs "
                                 f"{self.scenarios[0]}); vary only options that keep them.")
        self.observation_space, self.action_space = first.observation_space, first.action_space
        self.atari = first.atari
        self.info_fields = first.info_fields + tuple(f"scenario.{d.field}" for d in draws)
        self._scenario = {d.field: np.concatenate([np.full(hi - lo, s[d.field])
                                                   for (lo, hi), s in zip(self._slices,
                                                                          self.scenarios)])
                          for d in draws}

    def reset(self) -> Any:
        return concat([pool.reset() for pool in self._pools])

    def step(self, action: Any) -> TimeStep:
        self.send(action)
        return self.recv()

    def send(self, action: Any) -> None:
        for (lo, hi), pool in zip(self._slices, self._pools):
            pool.send(jax.tree.map(lambda a: np.asarray(a)[lo:hi], action))

    def recv(self) -> TimeStep:
        parts = [pool.recv() for pool in self._pools]
        sizes = [hi - lo for lo, hi in self._slices]
        info = merge_info([p.info for p in parts], sizes)
        info = {**(info or {}), "scenario": {k: v.copy() for k, v in self._scenario.items()}}
        return TimeStep(concat([p.obs for p in parts]),
                        *(np.concatenate([getattr(p, f) for p in parts])
                          for f in ("reward", "terminated", "truncated", "episode_over")),
                        info)

    def render(self, env_id: int = 0) -> np.ndarray:
        for (lo, hi), pool in zip(self._slices, self._pools):
            if lo <= env_id < hi:
                return pool.render(env_id - lo)
        raise IndexError(f"env_id {env_id} is not in 0..{self.num_envs - 1}.")

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
