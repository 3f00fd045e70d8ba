"""Batched environments for the actors: an EnvPool factory with one uniform step API.

Conventions every environment adapter follows (the actor and the losses rely on them):
- `reset() -> obs` and `step(action) -> TimeStep`, numpy arrays with a leading env axis.
- Optional `send(action)` + `recv() -> TimeStep`: the same step split in two, for envs that
  step in their own threads (EnvPool): `send` returns at once, `recv` waits. The actor then
  overlaps one half-pool's step with the other's policy (sebulba/actor.py); envs without them
  are stepped by `step` (sebulba/env_guard.py gives them a helper-thread `send`/`recv`).
- Autoreset one step late, as EnvPool does: the step that ends an episode returns that episode's
  real final observation; the next step resets the env, ignores its action and returns the first
  observation with reward 0 (a "reset step"). Truncated episodes can then bootstrap from the
  real final observation.
- `reward` is the raw environment reward (clipping, if any, is the agent's choice).
- `episode_over` marks the end of the real game, for statistics: with Atari's episodic-life
  training, a lost life sets `terminated` but not `episode_over`.
- Observations are arrays or dicts/tuples of arrays (multi-tensor), leading axis = envs.

`make_env` looks `EnvConfig.name` up in sebulba/registry.py (user envs) first, then treats a
"gymnasium:<id>" name as a gymnasium id (sebulba/adapters.py), then as an EnvPool id.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
from typing import Any, Callable

import numpy as np

from podracer import episode_metrics, scenarios
# Re-exported: the env section every runtime reads, and the values of action_mask_empty.
from podracer.env_config import MASK_EMPTY, EnvSection  # noqa: F401
from sebulba import adapters, env_workers, registry
# Re-exported: the step record and the float32 cast are part of this module's env API.
from sebulba.timestep import TimeStep, to_float32  # noqa: F401


@dataclasses.dataclass(frozen=True)
class EnvConfig(EnvSection):
    """Environment settings of host env batches: the fields every runtime reads
    (podracer.env_config.EnvSection: name, options, randomize, episode_metrics, the action
    mask) and Sebulba's own; Atari-only fields are ignored for other families."""

    name: str = "Pong-v5"            # EnvPool id, registered env, or "gymnasium:<id>"
    num_threads: int = 0             # EnvPool worker threads per pool; 0 = one per env up to cores
    max_episode_steps: int = 0       # 0 = EnvPool's default (Atari: 27000 steps = 108k frames)
    # Atari (defaults: Machado et al. 2018 protocol, sticky actions 0.25, full v5 preprocessing)
    episodic_life: bool = True       # lost life ends the training episode (not the statistics)
    repeat_action_probability: float = 0.25  # sticky actions
    noop_max: int = 30               # random no-ops at reset
    frame_skip: int = 4              # action repeat, max-pooled over the last two frames
    stack_num: int = 4               # stacked frames in the observation
    img_size: int = 84               # square grayscale frame size
    full_action_space: bool = False  # 18 actions instead of the game's minimal set
    # Worker processes that step a registered or "gymnasium:" env (Python simulators), each
    # hosting a contiguous slice of every env batch (sebulba/env_workers.py); 0 = step in the
    # actor's own thread. EnvPool ids refuse it: their C++ pools step in num_threads threads.
    workers: int = 0
    # EnvPool ids with `randomize`: each env batch is split into this many pools, each built
    # with its own drawn options (a pool fixes its options when built; sebulba/scenario_pools.py).
    scenario_pools: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        # EnvPool 1.2 segfaults on reset with noop_max=0; 1 already means "no no-ops".
        if self.noop_max < 1:
            raise ValueError(f"noop_max={self.noop_max}; must be >= 1 (1 = no random no-ops; "
                             f"EnvPool crashes on 0).")
        if not 0.0 <= self.repeat_action_probability <= 1.0:
            raise ValueError(f"repeat_action_probability={self.repeat_action_probability} "
                             f"must be in [0, 1].")
        for name in ("num_threads", "max_episode_steps", "workers"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 0 (0 = default).")
        for name in ("frame_skip", "stack_num", "img_size", "scenario_pools"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1.")


@functools.lru_cache(maxsize=1)
def _all_env_ids() -> tuple[str, ...]:
    import envpool
    return tuple(envpool.list_all_envs())


def check_env_id(name: str) -> None:
    """Raises a ValueError naming close matches when `name` is neither a registered env
    (sebulba/registry.py), a "gymnasium:<id>" of a registered gymnasium id, nor an EnvPool id."""
    if registry.env_maker(name) is not None:
        return
    if name.startswith(registry.GYMNASIUM_PREFIX):
        import gymnasium
        gym_id = name[len(registry.GYMNASIUM_PREFIX):]
        if gym_id in gymnasium.registry:
            return
        close = difflib.get_close_matches(gym_id, list(gymnasium.registry), n=5, cutoff=0.5)
        hint = f" Close matches: {', '.join(close)}." if close else ""
        raise ValueError(f"Unknown gymnasium environment id {gym_id!r} (from {name!r}).{hint}")
    ids = _all_env_ids()
    if name in ids:
        return
    user = registry.registered_envs()
    close = difflib.get_close_matches(name, user + ids, n=5, cutoff=0.5)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    mine = (f" Registered envs: {', '.join(user)}." if user else
            " No env is registered (sebulba.registry.register_env; import the module that "
            "registers yours before the config is checked).")
    raise ValueError(f"Unknown EnvPool environment id {name!r}, and no registered env of that "
                     f"name.{hint}{mine} See envpool.list_all_envs() for all {len(ids)} "
                     f"EnvPool ids, or use 'gymnasium:<id>' for a gymnasium id.")


def is_atari(name: str) -> bool:
    """True for EnvPool's Atari ids; False for every other id (also user and gymnasium ones)."""
    import envpool
    if registry.env_maker(name) is not None or name.startswith(registry.GYMNASIUM_PREFIX):
        return False
    return type(envpool.make_spec(name)).__name__ == "AtariEnvSpec"


class EnvPoolEnv:
    """An EnvPool batch with the uniform `reset`/`step` API of this module."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int,
                 render_mode: str | None = None) -> None:
        import envpool
        check_env_id(cfg.name)
        kwargs: dict[str, Any] = dict(num_envs=num_envs, batch_size=num_envs, seed=int(seed),
                                      num_threads=cfg.num_threads)
        if render_mode is not None:  # "rgb_array" for scripts/render.py
            kwargs["render_mode"] = render_mode
        if cfg.max_episode_steps > 0:
            kwargs["max_episode_steps"] = cfg.max_episode_steps
        self.atari = is_atari(cfg.name)
        if self.atari:
            kwargs.update(
                episodic_life=cfg.episodic_life, reward_clip=False,
                repeat_action_probability=cfg.repeat_action_probability,
                noop_max=cfg.noop_max, frame_skip=cfg.frame_skip, stack_num=cfg.stack_num,
                img_height=cfg.img_size, img_width=cfg.img_size,
                full_action_space=cfg.full_action_space)
        kwargs.update(cfg.options)  # e.g. a family's own settings, checked by EnvPool
        self._env = envpool.make(cfg.name, env_type="gymnasium", **kwargs)
        self.num_envs = num_envs
        self.observation_space = self._env.observation_space
        self.action_space = self._env.action_space
        # What every step's info holds, from EnvPool's spec (no probe step needed).
        keys = self._env.spec._state_keys
        self.info_fields = tuple(k[len("info:"):] for k in keys if k.startswith("info:")) + (
            ("elapsed_step",) if "elapsed_step" in keys else ())

    def reset(self) -> np.ndarray:
        obs, _ = self._env.reset()
        return to_float32(obs)

    def step(self, action: np.ndarray) -> TimeStep:
        return self._timestep(*self._env.step(action))

    def send(self, action: np.ndarray) -> None:
        """Starts a step of every env in EnvPool's C++ threads and returns at once (the GIL
        is released): the actor runs the policy of its other half-pool meanwhile."""
        self._env.send(action)

    def recv(self) -> TimeStep:
        """Waits for the step `send` started. batch_size == num_envs, so EnvPool returns
        every env, in env-id order, as `step` does."""
        return self._timestep(*self._env.recv())

    def _timestep(self, obs, reward, terminated, truncated, info) -> TimeStep:
        over = truncated | (info["terminated"].astype(bool) if self.atari else terminated)
        return TimeStep(to_float32(obs), reward.astype(np.float32), terminated, truncated, over,
                        info)

    def render(self, env_id: int = 0) -> np.ndarray:
        """RGB frame [H, W, 3] of one env; needs render_mode="rgb_array" at creation."""
        return self._env.render(env_ids=[env_id])[0]

    def close(self) -> None:
        self._env.close()


def episode_metrics_of(env: Any, text: str, where: str
                       ) -> tuple[episode_metrics.EpisodeMetric, ...]:
    """The metrics of an EnvConfig.episode_metrics `text` for `env` (a probe batch), resolved
    against the fields it reports (ValueError naming them). "auto" asks only an env that
    declares its fields (`info_fields`), never steps it."""
    asked = text != episode_metrics.AUTO and episode_metrics.parse(text)
    reported = info_fields(env) if asked else getattr(env, "info_fields", None) or ()
    return episode_metrics.chosen(text, reported, where)


def info_fields(env: Any) -> tuple[str, ...]:
    """The info fields an env batch reports, for the check of env.episode_metrics: its
    `info_fields` attribute where it declares one (an env that reports a field only at a
    game's end must), else the fields of the info of one step with random actions (the env is
    reset first; it is left mid-game)."""
    declared = getattr(env, "info_fields", None)
    if declared is not None:
        return tuple(declared)
    env.reset()
    return episode_metrics.reported_fields(env.step(sample_actions(env.action_space,
                                                                   env.num_envs)).info)


def sample_actions(space: Any, n: int) -> Any:
    """`n` random actions of a gymnasium space, batched as the policy emits them (an array
    with a leading env axis, or a dict/tuple of such arrays)."""
    from gymnasium import spaces
    if isinstance(space, spaces.Dict):
        return {k: sample_actions(s, n) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(sample_actions(s, n) for s in space.spaces)
    return np.stack([np.asarray(space.sample()) for _ in range(n)])


def check_randomize(cfg: EnvConfig) -> None:
    """Checks env.randomize of a host env before anything is built: gymnasium ids (the
    attributes of the env, sebulba/host_scenarios.py) and registered envs (their own maker
    draws, from `env_config.randomize`) are checked when built; an EnvPool id's fields are
    checked here against its options (drawn per pool: sebulba/scenario_pools.py; ValueError
    naming a field it cannot vary)."""
    if cfg.randomize and registry.env_maker(cfg.name) is None and not cfg.name.startswith(
            registry.GYMNASIUM_PREFIX):
        from sebulba import scenario_pools  # gymnasium and envpool load only when used
        scenario_pools.check(cfg)


def check_scenario_fields(batch: Any, cfg: EnvConfig, where: str) -> None:
    """A registered env's batch that env.randomize varies must say what it can vary (its
    `scenario_fields`); ValueError naming the field it cannot vary, or the missing list."""
    if not cfg.randomize:
        return
    fields = getattr(batch, "scenario_fields", None)
    if fields is None:
        raise ValueError(f"env.randomize={cfg.randomize!r}: {where} does not declare the "
                         f"fields it can vary: give its batch a `scenario_fields` tuple and "
                         f"draw them at each reset (sebulba.host_scenarios.Sampler over "
                         f"env_config.randomize; docs/howto_env.md).")
    scenarios.check_fields(scenarios.parse(cfg.randomize), tuple(fields),
                           f"env.randomize on {where}")


def worker_maker(cfg: EnvConfig) -> Callable[[int, int], Any]:
    """What each worker process of `env.workers` calls, `(num_envs, seed) -> env batch`,
    picklable by reference: a registered env's maker, or a gymnasium id's spec (a worker has
    not imported the module that registered it, so the spec travels, not the id). Raises a
    ValueError for an EnvPool id."""
    inner = dataclasses.replace(cfg, workers=0)
    maker = registry.env_maker(cfg.name)
    if maker is not None:
        return functools.partial(_registered_batch, inner, maker)
    if cfg.name.startswith(registry.GYMNASIUM_PREFIX):
        import gymnasium
        check_env_id(cfg.name)
        spec = gymnasium.spec(cfg.name[len(registry.GYMNASIUM_PREFIX):])
        return functools.partial(adapters.gymnasium_make, spec, randomize=cfg.randomize,
                                 **cfg.options)
    raise ValueError(f"env.workers={cfg.workers} steps Python envs (a registered env or "
                     f"'gymnasium:<id>'); {cfg.name!r} is an EnvPool id, whose C++ pool steps "
                     f"in env.num_threads threads: set env.workers=0.")


def _registered_batch(cfg: EnvConfig, maker: Any, num_envs: int, seed: int) -> Any:
    """A registered maker's batch, checked (in the actor's process or a worker's)."""
    where = f"the env maker registered as {cfg.name!r}"
    batch = maker(num_envs, seed, cfg)
    check_scenario_fields(batch, cfg, where)
    batch = adapters.as_runtime_env(batch, num_envs, seed, where)
    check_reads_progress(batch, cfg, where)
    return batch


def check_reads_progress(batch: Any, cfg: EnvConfig, where: str) -> None:
    """A batch whose env.randomize has a schedule must read the training progress (its
    `reads_progress`, with `set_progress(progress)`): ValueError naming it otherwise (its
    draws would stay at one point of the schedule)."""
    moved = scenarios.scheduled(scenarios.parse(cfg.randomize))
    if moved and not getattr(batch, "reads_progress", False):
        close = getattr(batch, "close", None)
        if close is not None:
            close()
        raise ValueError(f"env.randomize={cfg.randomize!r} schedules "
                         f"{', '.join(d.field for d in moved)}, but {where}'s batch does not "
                         f"read the training progress: give it `reads_progress = True` and "
                         f"`set_progress(progress)` (host_scenarios.randomized envs in a "
                         f"gymnasium batch have them; docs/howto_env.md).")


def make_env(cfg: EnvConfig, num_envs: int, seed: int,
             render_mode: str | None = None) -> Any:
    """Creates `num_envs` environments seeded from `seed` (each env gets seed + index): a
    registered env, a "gymnasium:<id>", or an EnvPool id (module docstring)."""
    if num_envs <= 0:
        raise ValueError(f"num_envs must be positive, got {num_envs}.")
    check_randomize(cfg)
    if cfg.workers > 0:
        return env_workers.ProcessEnvBatch(worker_maker(cfg), num_envs, seed, cfg.workers,
                                           name=cfg.name)
    maker = registry.env_maker(cfg.name)
    if maker is not None:
        return _registered_batch(cfg, maker, num_envs, seed)
    if cfg.name.startswith(registry.GYMNASIUM_PREFIX):
        check_env_id(cfg.name)
        return adapters.gymnasium_make(cfg.name[len(registry.GYMNASIUM_PREFIX):], num_envs,
                                       seed, randomize=cfg.randomize, **cfg.options)
    if cfg.randomize:
        from sebulba import scenario_pools
        return scenario_pools.ScenarioPools(
            cfg, num_envs, seed, lambda c, n, s: EnvPoolEnv(c, n, s, render_mode))
    return EnvPoolEnv(cfg, num_envs, seed, render_mode)
