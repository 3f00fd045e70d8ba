"""Trains PPO on a JAX-native env with the Anakin runtime (or on EnvPool with Sebulba, by
`--config.runtime`); docs/anakin.md.

    python experiments/ppo_gymnax.py --config=experiments/configs/ppo_gymnax.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments import train  # noqa: E402
from sebulba import experiment  # noqa: E402

run = train.run  # dispatches on config.runtime

if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_gymnax.py"))
