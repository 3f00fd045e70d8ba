"""Trains IMPALA on EnvPool Atari (or any discrete EnvPool task with another config).

    python experiments/impala_atari.py --config=experiments/configs/impala_atari.py \
        --config.env.name=Pong-v5 --config.num_envs=32
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import agents.impala as impala  # noqa: E402
from sebulba import experiment  # noqa: E402

def make_agent(network, agent_config, num_updates: int):
    return impala.make_agent(network, impala.ImpalaConfig(**agent_config.to_dict()), num_updates)


def run(config):
    return experiment.run(config, make_agent, name="impala")


if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "impala_atari.py"))
