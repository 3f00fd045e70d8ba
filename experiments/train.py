"""Trains any registered agent on any environment: the generic experiment entry.

    python experiments/train.py --config=experiments/configs/ppo_classic.py
    python experiments/train.py --config=experiments/configs/impala_classic.py \
        --config.env.name=gymnasium:Acrobot-v1

The agent is `config.agent_name` (built in: impala, ppo; yours with `agents.register_agent`,
docs/howto_agent.md); the runtime is `config.runtime` (sebulba, or anakin for JAX-native envs).
User modules that register envs, torsos or agents load with `--import my_module` (a dotted
name or a .py file; repeatable; every entry point that takes --config has it):

    python experiments/train.py --import my_envs.py --config.env.name=MyEnv-v0

or a user script imports them and then calls
`experiments.wiring.cli(experiments.train.run, "path/to/config.py")`, as
examples/driving/train.py does.
"""
import os

from experiments import wiring

# `run(config, make_env=None, **kwargs)`: experiments.wiring.run with the config's agent.
run = wiring.run

if __name__ == "__main__":
    wiring.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_classic.py"))
