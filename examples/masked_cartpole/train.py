"""PPO with or without an LSTM on CartPole with the velocities hidden
(examples/masked_cartpole/README.md). From the repository root:

    python -m examples.masked_cartpole.train --config=examples/masked_cartpole/config.py:lstm
    python -m examples.masked_cartpole.train --config=examples/masked_cartpole/config.py:ff
"""
import os

import examples.masked_cartpole  # noqa: F401  registers MaskedCartPole-v1
from experiments import train, wiring

if __name__ == "__main__":
    wiring.cli(train.run, os.path.join(os.path.dirname(__file__), "config.py"))
