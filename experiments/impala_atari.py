"""Trains IMPALA on EnvPool Atari, or any EnvPool task with another config (any action space).

    python experiments/impala_atari.py --config=experiments/configs/impala_atari.py \
        --config.env.name=Pong-v5 --config.num_envs=32

The agent is agents/impala (its `SPEC`: config, checks, builder); this file only names it.
"""
import functools
import os

from experiments import wiring

# `run(config, make_env=None, **kwargs)`: `make_env(num_envs, seed)` a user environment instead
# of EnvPool (sebulba/envs.py API); other keyword arguments as experiments.wiring.run.
run = functools.partial(wiring.run, agent="impala")

if __name__ == "__main__":
    wiring.cli(run, os.path.join(os.path.dirname(__file__), "configs", "impala_atari.py"))
