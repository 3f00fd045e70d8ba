"""Trains PPO or IMPALA on the example driving task (examples/driving/README.md).

    python examples/driving/train.py --config=examples/driving/config.py:ppo
    python examples/driving/train.py --config=examples/driving/config.py:impala

This is the whole of "bring your own env and network" from a user script: import the module
that registers them, then hand the library's generic experiment to `experiment.cli`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import examples.driving  # noqa: E402,F401  registers Driving-v0 and driving_net
from experiments import train  # noqa: E402  registers the built-in agents
from sebulba import experiment  # noqa: E402

if __name__ == "__main__":
    experiment.cli(train.run, os.path.join(os.path.dirname(__file__), "config.py"))
