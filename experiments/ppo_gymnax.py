"""Trains PPO on a JAX-native env with the Anakin runtime (or on EnvPool with Sebulba, by
`--config.runtime`); docs/anakin.md.

    python experiments/ppo_gymnax.py --config=experiments/configs/ppo_gymnax.py
"""
import functools
import os

from experiments import wiring

run = functools.partial(wiring.run, agent="ppo")  # dispatches on config.runtime

if __name__ == "__main__":
    wiring.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_gymnax.py"))
