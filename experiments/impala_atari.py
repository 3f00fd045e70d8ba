"""Trains IMPALA on EnvPool Atari, or any EnvPool task with another config (any action space).

    python experiments/impala_atari.py --config=experiments/configs/impala_atari.py \
        --config.env.name=Pong-v5 --config.num_envs=32
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import agents.impala as impala  # noqa: E402
from sebulba import experiment  # noqa: E402

def make_agent(network, agent_config, num_updates: int, batch_envs: int = 0):
    """`batch_envs`: env columns per update, needed only for agent.reward_scaling."""
    return impala.make_agent(network, impala.ImpalaConfig(**agent_config.to_dict()), num_updates,
                             batch_envs=batch_envs)


def run(config, make_env=None):
    """`make_env(num_envs, seed)`: a user environment instead of EnvPool (sebulba/envs.py API)."""
    return experiment.run(config, lambda network, agent_config, num_updates: make_agent(
                              network, agent_config, num_updates,
                              batch_envs=experiment.runtime_config(config).batch_envs),
                          name="impala", agent_config=impala.ImpalaConfig, make_env=make_env)


if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "impala_atari.py"))
