"""Trains PPO or IMPALA on the example driving task (examples/driving/README.md). From the
repository root:

    python -m examples.driving.train --config=examples/driving/config.py:ppo
    python -m examples.driving.train --config=examples/driving/config.py:impala

This is the whole of "bring your own env and network" from a user script: import the module
that registers them, then hand the library's generic experiment to `wiring.cli`.
"""
import os

import examples.driving  # noqa: F401  registers Driving-v0 and driving_net
from experiments import train, wiring

if __name__ == "__main__":
    wiring.cli(train.run, os.path.join(os.path.dirname(__file__), "config.py"))
