"""A small driving task written for the example: NumPy, batched over envs, no simulator needed.

A car drives up a straight three-lane road with parked cars in it. Every step it sees
- `grid`: an ego-centred occupancy grid uint8 [16, 16, 1] (a top-down "LiDAR image": 255 for a
  parked car, 128 off the road), 0.5 lane widths per column, 1 length unit per row, from 2
  units behind to 14 ahead;
- `state`: float32 [6], noisy sensors: speed, sin and cos of the heading, lateral position,
  offset from the lane centre, and the fraction of the time limit used;
and acts with a mixed action (gymnasium Dict):
- `steer`, `throttle`: Box(-1, 1, (1,)) each (steering is applied with actuator noise);
- `signal`: Discrete(3), the turn signal (0 off, 1 left, 2 right).

Scenarios: `car_gap` (the shortest distance between consecutive parked cars; the longest is
twice it: smaller is denser traffic), `sensor_noise` and `steer_noise` are options of the batch
and the fields `env.randomize` can vary (`scenario_fields`): env i draws them anew at every
reset from its own `host_scenarios.Sampler` (seed + i), reports them in `info["scenario"]`, and
follows a schedule on them (a curriculum: `reads_progress`, `set_progress`).

Rewards are shaped and delayed: 0.2 per unit of forward progress each step; +1 for every
10 units driven, paid only when the checkpoint is passed; -1 for a lane change whose turn
signal was wrong when the car left its lane, paid when it reaches the new lane's centre; a
small steering penalty; -5 for hitting a car or leaving the road, which terminates the
episode. Episodes are truncated after `max_steps` (200) steps. Each step's `info` holds those
terms by name (`rewards`: progress, steering, checkpoint, signal, crash; they add up to the
reward) and `crashed`, for `env.episode_metrics` (the example's configs log them).

The batch follows the runtime's env API (sebulba/envs.py) natively, including EnvPool's
one-step-late autoreset, so the runtime needs no adapter for it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from podracer.curriculum import TrainingProgress
from sebulba.envs import TimeStep
from sebulba.host_scenarios import Sampler

LANES = 3            # road spans x in [0, LANES); lane i is centred at i + 0.5
GRID = 16            # occupancy grid cells per side
CELL_X, CELL_Y = 0.5, 1.0
NUM_CARS = 4         # parked cars per env, respawned ahead once passed
V_MIN, V_MAX = 0.1, 0.5  # units per step; the car cannot stop (standing still never crashes)
CHECKPOINT = 10.0    # units between delayed checkpoint bonuses
CAR_GAP = 6.0        # default shortest distance between consecutive parked cars (longest: 2x)
PROGRESS = 0.2       # reward per unit of forward progress
CRASH = -5.0


# What each scenario field allows: a gap longer than a car, noise stds >= 0.
_ALLOWED = {"car_gap": ("> 1.6, a car's length", lambda v: v > 1.6),
            "sensor_noise": (">= 0", lambda v: v >= 0.0),
            "steer_noise": (">= 0", lambda v: v >= 0.0)}


def _checked(scenario: dict[str, float], where: str) -> dict[str, float]:
    """`scenario`, or a ValueError naming the value out of its range."""
    for field, value in scenario.items():
        allowed, ok = _ALLOWED[field]
        if not ok(value):
            raise ValueError(f"DrivingEnv: {where} {field}={value}; it must be {allowed}.")
    return scenario


class DrivingEnv:
    """`num_envs` independent roads; env i draws its randomness from seed + i, and its
    scenario (`randomize`, an env.randomize text over `scenario_fields`) at every reset."""

    scenario_fields = ("car_gap", "sensor_noise", "steer_noise")

    def __init__(self, num_envs: int, seed: int, max_steps: int = 200,
                 sensor_noise: float = 0.02, steer_noise: float = 0.05,
                 car_gap: float = CAR_GAP, randomize: str = "") -> None:
        self.num_envs, self.max_steps = num_envs, max_steps
        self._defaults = _checked({"car_gap": float(car_gap), "sensor_noise": float(sensor_noise),
                                   "steer_noise": float(steer_noise)}, "options")
        # Each env's scenario, drawn at its resets by its own sampler (seeded seed + i, so env
        # i draws the same scenarios in the actor's process and in a worker's).
        self._scenario = {k: np.full(num_envs, v) for k, v in self._defaults.items()}
        self._samplers = ([Sampler(randomize, seed + i) for i in range(num_envs)]
                          if randomize else [])
        # A curriculum: the runtime hands the training progress before the resets it governs.
        self.reads_progress = bool(self._samplers and self._samplers[0].scheduled)
        self._progress: TrainingProgress | None = None  # None: a schedule's end
        # One generator for the whole batch, seeded from the batch's seed sequence.
        self._rng = np.random.default_rng([seed + i for i in range(num_envs)])
        self.observation_space = spaces.Dict({
            "grid": spaces.Box(0, 255, (GRID, GRID, 1), np.uint8),
            "state": spaces.Box(-np.inf, np.inf, (6,), np.float32)})
        self.action_space = spaces.Dict({
            "steer": spaces.Box(-1.0, 1.0, (1,), np.float32),
            "throttle": spaces.Box(-1.0, 1.0, (1,), np.float32),
            "signal": spaces.Discrete(3)})
        n = num_envs
        self._x, self._y = np.zeros(n), np.zeros(n)
        self._heading, self._speed = np.zeros(n), np.zeros(n)
        self._t = np.zeros(n, np.int64)
        self._cars = np.zeros((n, NUM_CARS, 2))  # (lane centre x, y) of each parked car
        self._needs_reset = np.zeros(n, bool)
        self._lane = np.zeros(n)         # the lane the car last settled in
        self._exit_signal = np.zeros(n, np.int64)  # turn signal when it last left that lane
        # Cell centres relative to the car: columns lateral, rows forward (row 0 = farthest).
        self._cell_x = (np.arange(GRID) - GRID / 2 + 0.5) * CELL_X
        self._cell_y = (GRID - 1 - np.arange(GRID)) * CELL_Y - 2.0 + 0.5

    def set_progress(self, progress: TrainingProgress) -> None:
        """The training progress the next resets draw their scenarios at."""
        self._progress = progress

    def _gaps(self, idx: np.ndarray | slice, shape: tuple[int, int]) -> np.ndarray:
        shortest = self._scenario["car_gap"][idx, None]
        return self._rng.uniform(shortest, 2.0 * shortest, shape)

    def _start(self, idx: np.ndarray) -> None:
        if self._samplers:
            for i in idx:
                drawn = self._samplers[i].draw(self._defaults, self._progress)
                for field, value in _checked(drawn, "env.randomize drew").items():
                    self._scenario[field][i] = value
        self._x[idx], self._y[idx] = 1.5, 0.0
        self._heading[idx], self._speed[idx], self._t[idx] = 0.0, 0.2, 0
        self._lane[idx], self._exit_signal[idx] = 1.0, 0
        gaps = self._gaps(idx, (idx.size, NUM_CARS))
        ahead = 6.0 + np.cumsum(gaps, axis=1)
        self._cars[idx, :, 1] = ahead
        self._cars[idx, :, 0] = self._rng.integers(0, LANES, (idx.size, NUM_CARS)) + 0.5

    def _respawn_passed(self) -> None:
        passed = self._cars[:, :, 1] < self._y[:, None] - 3.0
        if passed.any():
            far = self._cars[:, :, 1].max(axis=1, keepdims=True)
            gaps = np.cumsum(self._gaps(slice(None), passed.shape), axis=1)
            self._cars[:, :, 1] = np.where(passed, far + gaps, self._cars[:, :, 1])
            lanes = self._rng.integers(0, LANES, passed.shape) + 0.5
            self._cars[:, :, 0] = np.where(passed, lanes, self._cars[:, :, 0])

    def _obs(self) -> dict[str, np.ndarray]:
        n = self.num_envs
        cx = self._x[:, None] + self._cell_x[None, :]                  # [B, G] world x per column
        cy = self._y[:, None] + self._cell_y[None, :]                  # [B, G] world y per row
        dx = np.abs(cx[:, None, :, None] - self._cars[:, None, None, :, 0])   # [B, 1, G, K]
        dy = np.abs(cy[:, :, None, None] - self._cars[:, None, None, :, 1])   # [B, G, 1, K]
        car = ((dx < 0.5) & (dy < 0.7)).any(axis=-1)                   # [B, G, G]
        off_road = ((cx < 0.0) | (cx > LANES))[:, None, :]             # [B, 1, G]
        grid = np.where(car, 255, np.where(off_road, 128, 0)).astype(np.uint8)
        lane_offset = self._x - (np.clip(np.floor(self._x), 0, LANES - 1) + 0.5)
        state = np.stack([self._speed / V_MAX, np.sin(self._heading), np.cos(self._heading),
                          self._x / LANES - 0.5, lane_offset, self._t / self.max_steps], -1)
        state += self._rng.normal(0.0, self._scenario["sensor_noise"][:, None], state.shape)
        return {"grid": grid[..., None], "state": state.astype(np.float32).reshape(n, 6)}

    def reset(self) -> dict[str, np.ndarray]:
        self._needs_reset[:] = False
        self._start(np.arange(self.num_envs))
        return self._obs()

    def step(self, action: dict[str, Any]) -> TimeStep:
        n = self.num_envs
        steer = np.clip(np.asarray(action["steer"], np.float64).reshape(n), -1.0, 1.0)
        throttle = np.clip(np.asarray(action["throttle"], np.float64).reshape(n), -1.0, 1.0)
        signal = np.asarray(action["signal"]).reshape(n)
        steer = steer + self._rng.normal(0.0, self._scenario["steer_noise"], n)
        lane_before = np.floor(self._x)
        y_before = self._y.copy()
        self._heading = np.clip(self._heading + 0.15 * steer, -np.pi / 3, np.pi / 3)
        self._speed = np.clip(self._speed + 0.05 * throttle, V_MIN, V_MAX)
        self._x = self._x + self._speed * np.sin(self._heading)
        self._y = self._y + self._speed * np.cos(self._heading)
        self._t += 1

        progress = PROGRESS * (self._y - y_before)
        steering = -0.01 * steer ** 2
        # Delayed bonus: +1 when a checkpoint (every CHECKPOINT units) is passed.
        checkpoint = np.floor(self._y / CHECKPOINT) - np.floor(y_before / CHECKPOINT)
        # Turn signals, a delayed penalty: the signal is read when the car leaves its lane
        # and judged when it settles near the centre of another one (so weaving across a
        # lane line neither pays nor costs).
        lane_after = np.floor(self._x)
        leaving = (lane_before == self._lane) & (lane_after != self._lane)
        self._exit_signal = np.where(leaving, signal, self._exit_signal)
        settled = (lane_after != self._lane) & (np.abs(self._x - lane_after - 0.5) < 0.25)
        wanted = np.where(lane_after < self._lane, 1, 2)  # left = towards x = 0
        signal_term = np.where(settled & (self._exit_signal != wanted), -1.0, 0.0)
        self._lane = np.where(settled, lane_after, self._lane)
        dx = np.abs(self._x[:, None] - self._cars[:, :, 0])
        dy = np.abs(self._y[:, None] - self._cars[:, :, 1])
        crashed = ((dx < 0.6) & (dy < 0.8)).any(axis=1) | (self._x < 0) | (self._x > LANES)
        # A crash's step pays CRASH alone: the other terms are 0 there, so they add up to it.
        # (Summed in the order the reward was always computed in: the same float values.)
        terms = {"progress": progress, "steering": steering, "checkpoint": checkpoint,
                 "signal": signal_term}
        terms = {k: np.where(crashed, 0.0, v) for k, v in terms.items()}
        terms["crash"] = np.where(crashed, CRASH, 0.0)
        terminated = crashed
        truncated = (self._t >= self.max_steps) & ~terminated

        # EnvPool's autoreset: envs whose episode ended on the previous step restart now,
        # ignore their action and report reward 0 with terminated = truncated = False.
        resetting = self._needs_reset
        if resetting.any():
            self._start(np.flatnonzero(resetting))
            for term in terms.values():
                term[resetting] = 0.0
            terminated, truncated = terminated & ~resetting, truncated & ~resetting
            crashed = crashed & ~resetting
        self._respawn_passed()
        self._needs_reset = terminated | truncated
        reward = sum(terms.values())
        # The reward's terms by name, and the crash flag, for env.episode_metrics.
        info = {"rewards": {k: v.astype(np.float32) for k, v in terms.items()},
                "crashed": crashed}
        if self._samplers:  # each env's drawn scenario (episode metrics, per-bin summaries)
            info["scenario"] = {k: v.astype(np.float32) for k, v in self._scenario.items()}
        return TimeStep(self._obs(), reward.astype(np.float32), terminated, truncated,
                        terminated | truncated, info)

    def close(self) -> None:
        pass


def make_driving_env(num_envs: int, seed: int, env_config: Any = None) -> DrivingEnv:
    """The registered maker: `env.options` of the config become DrivingEnv's settings, and
    `env.randomize` its drawn scenarios."""
    options = dict(getattr(env_config, "options", None) or {})
    return DrivingEnv(num_envs, seed, **options,
                      randomize=getattr(env_config, "randomize", "") or "")
