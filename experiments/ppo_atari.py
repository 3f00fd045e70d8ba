"""Trains PPO on EnvPool Atari (or any discrete EnvPool task with another config).

    python experiments/ppo_atari.py --config=experiments/configs/ppo_atari.py \
        --config.env.name=Pong-v5 --config.synchronous=True

`config.synchronous` picks the mode: True gives on-policy PPO (policy lag 0); False lets actors
run ahead, and `agent.correction="auto"` then corrects stale rollouts with V-trace.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import agents.ppo as ppo  # noqa: E402
from sebulba import experiment  # noqa: E402

def agent_config(config) -> ppo.PPOConfig:
    """The agent's frozen config, with correction="auto" resolved for the runtime's mode."""
    return ppo.PPOConfig(**config.agent.to_dict()).resolve(bool(config.synchronous))


def check_minibatches(config) -> None:
    """Fails before any thread starts when the env columns do not split into minibatches."""
    envs = len(config.actor_device_ids) * config.num_actor_threads * config.num_envs
    per_learner = envs // len(config.learner_device_ids)
    if per_learner % config.agent.num_minibatches != 0:
        raise ValueError(
            f"agent.num_minibatches={config.agent.num_minibatches} must divide the "
            f"{per_learner} environments each learner device holds per update "
            f"(actor devices x num_actor_threads x num_envs / learner devices).")


def run(config):
    cfg = agent_config(config)
    check_minibatches(config)
    return experiment.run(config, lambda network, _, num_updates:
                          ppo.make_agent(network, cfg, num_updates), name="ppo")


if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_atari.py"))
