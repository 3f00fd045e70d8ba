"""Trains PPO on an EnvPool MuJoCo task (HalfCheetah-v4 by default) with continuous actions.

    python experiments/ppo_mujoco.py                                   # PPO paper / cleanrl setup
    python experiments/ppo_mujoco.py --config.env.name=Hopper-v4
    python experiments/ppo_mujoco.py --config=experiments/configs/ppo_mujoco.py:async

The agent is the same as experiments/ppo_atari.py's; only the defaults differ (see
experiments/configs/ppo_mujoco.py for their sources, docs/mujoco.md for results).
"""
import os

from experiments import wiring
from experiments.ppo_atari import run

__all__ = ["run"]

if __name__ == "__main__":
    wiring.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_mujoco.py"))
