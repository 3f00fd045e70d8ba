"""Trains PPO on EnvPool Atari, or any EnvPool task with another config (any action space;
experiments/ppo_mujoco.py has the MuJoCo defaults).

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
    """Fails before any thread starts when the env columns (or, with
    agent.minibatch_axis="sample", the steps) do not split into minibatches, or when a
    recurrent network (network.lstm_size > 0) is asked for minibatches of single steps."""
    if (config.network.get("lstm_size", 0) and
            config.agent.get("minibatch_axis", "env") != "env"):
        raise ValueError(
            f"agent.minibatch_axis={config.agent.minibatch_axis!r} cannot be used with "
            f"network.lstm_size={config.network.lstm_size}: a recurrent core is re-run over "
            f"whole env sequences; use agent.minibatch_axis=\"env\" (docs/recurrent.md).")
    envs = len(config.actor_device_ids) * config.num_actor_threads * config.num_envs
    per_learner = envs // len(config.learner_device_ids)
    what = "environments"
    if config.agent.get("minibatch_axis", "env") == "sample":
        per_learner, what = per_learner * config.unroll_length, "steps (unroll_length x envs)"
    if per_learner % config.agent.num_minibatches != 0:
        raise ValueError(
            f"agent.num_minibatches={config.agent.num_minibatches} must divide the "
            f"{per_learner} {what} each learner device holds per update "
            f"(actor devices x num_actor_threads x num_envs / learner devices).")


def run(config, make_env=None):
    """`make_env(num_envs, seed)`: a user environment instead of EnvPool (sebulba/envs.py API)."""
    # validate (inside experiment.run) type-checks config.agent and runs check_minibatches
    # before anything is built. batch_envs (for reward scaling) is read after the run has
    # joined its multi-host job, when the process count is known.
    return experiment.run(config, lambda network, _, num_updates: ppo.make_agent(
                              network, agent_config(config), num_updates,
                              batch_envs=experiment.runtime_config(config).batch_envs),
                          name="ppo", agent_config=ppo.PPOConfig, checks=(check_minibatches,),
                          make_env=make_env)


if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_atari.py"))
