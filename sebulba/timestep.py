"""What one batched env step returns (`TimeStep`), and the float32 cast of observations:
the types sebulba/envs.py (EnvPool) and sebulba/adapters.py (gymnasium, dm_env, user envs)
share, in a module of their own so neither imports the other for them."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class TimeStep(NamedTuple):
    obs: np.ndarray          # [B, ...] observation after the step
    reward: np.ndarray       # [B] float32 raw reward
    terminated: np.ndarray   # [B] bool, episode ended in a terminal state (no bootstrap)
    truncated: np.ndarray    # [B] bool, episode cut by a time limit (bootstrap)
    episode_over: np.ndarray  # [B] bool, the real game ended (for return statistics)
    # The env's per-step info: a dict of [B] arrays (nested dicts allowed; gymnasium's
    # "_<key>" masks say which envs reported a key), read for env.episode_metrics; None = none.
    info: Any = None


def to_float32(obs: Any) -> Any:
    """EnvPool's MuJoCo tasks return float64 observations; JAX computes in float32 (x64 off),
    so cast once on the host rather than have every device_put convert (and warn). Dict and
    tuple observations (MiniGrid, dm_control, user envs) are cast leaf by leaf."""
    if isinstance(obs, dict):
        return {k: to_float32(v) for k, v in obs.items()}
    if isinstance(obs, (tuple, list)):
        return type(obs)(to_float32(v) for v in obs)
    obs = np.asarray(obs)
    return obs.astype(np.float32) if obs.dtype == np.float64 else obs
