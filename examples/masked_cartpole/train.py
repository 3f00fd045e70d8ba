"""PPO with or without an LSTM on CartPole with the velocities hidden
(examples/masked_cartpole/README.md).

    python examples/masked_cartpole/train.py --config=examples/masked_cartpole/config.py:lstm
    python examples/masked_cartpole/train.py --config=examples/masked_cartpole/config.py:ff
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import examples.masked_cartpole  # noqa: E402,F401  registers MaskedCartPole-v1
from experiments import train  # noqa: E402  registers the built-in agents
from sebulba import experiment  # noqa: E402

if __name__ == "__main__":
    experiment.cli(train.run, os.path.join(os.path.dirname(__file__), "config.py"))
