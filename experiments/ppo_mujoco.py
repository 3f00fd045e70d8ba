"""Trains PPO on an EnvPool MuJoCo task (HalfCheetah-v4 by default) with continuous actions.

    python experiments/ppo_mujoco.py                                   # PPO paper / cleanrl setup
    python experiments/ppo_mujoco.py --config.env.name=Hopper-v4
    python experiments/ppo_mujoco.py --config=experiments/configs/ppo_mujoco.py:async

The agent is the same as experiments/ppo_atari.py's; only the defaults differ (see
experiments/configs/ppo_mujoco.py for their sources, docs/mujoco.md for results).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments.ppo_atari import run  # noqa: E402
from sebulba import experiment  # noqa: E402

__all__ = ["run"]

if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_mujoco.py"))
