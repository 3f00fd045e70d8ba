"""Trains any registered agent on any environment: the generic experiment entry.

    python experiments/train.py --config=experiments/configs/ppo_classic.py
    python experiments/train.py --config=experiments/configs/impala_classic.py \
        --config.env.name=gymnasium:Acrobot-v1

The agent is `config.agent_name` (IMPALA and PPO are registered below; yours with
`agents.register_agent`, docs/howto_agent.md). Configs without an `agent_name` field get the
one registered agent whose hyperparameter dataclass has exactly the fields of `config.agent`.
User modules that register envs, torsos or agents load with `--import my_module` (a dotted
name or a .py file; repeatable; every entry point that takes --config has it):

    python experiments/train.py --import my_envs.py --config.env.name=MyEnv-v0

or a user script imports them and then calls
`sebulba.experiment.cli(experiments.train.run, "path/to/config.py")`, as
examples/driving/train.py does.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import agents  # noqa: E402
import agents.ppo as ppo  # noqa: E402
from agents.impala import ImpalaConfig  # noqa: E402
from agents.registry import AgentSpec, infer_agent  # noqa: E402
from experiments import impala_atari, ppo_atari  # noqa: E402
from sebulba import experiment  # noqa: E402
from sebulba.validation import ConfigError  # noqa: E402


def _build_impala(network, config, num_updates: int):
    return impala_atari.make_agent(network, config.agent, num_updates,
                                   batch_envs=experiment.runtime_config(config).batch_envs)


def _build_ppo(network, config, num_updates: int):
    return ppo.make_agent(network, ppo_atari.agent_config(config), num_updates,
                          batch_envs=experiment.runtime_config(config).batch_envs)


agents.register_agent("impala", _build_impala, config_cls=ImpalaConfig)
agents.register_agent("ppo", _build_ppo, config_cls=ppo.PPOConfig,
                      checks=(ppo_atari.check_minibatches,))


def agent_spec(config) -> AgentSpec:
    """The agent `config.agent_name` names, or the one whose fields match `config.agent`."""
    name = config.get("agent_name")
    if name:
        try:
            return agents.get_agent(name)
        except ValueError as e:
            raise ConfigError(f"agent_name={name!r}: {e}") from None
    spec = infer_agent(list(config.agent.keys()))
    if spec is None:
        raise ConfigError(f"the config has no agent_name and its agent fields match no single "
                          f"registered agent ({list(agents.registered_agents())}); add "
                          f"`config.agent_name = \"<name>\"` to the config file.")
    return spec


def run(config, make_env=None, **train_kwargs):
    """Trains `config`'s agent; `make_env(num_envs, seed)` optionally replaces env.name's env.

    Extra keyword arguments go to `sebulba.experiment.run` (e.g. `wrap_env`, `on_update`).
    """
    spec = agent_spec(config)
    runtime = config.get("runtime", "sebulba")  # configs with a `runtime` field pick one
    if runtime != "sebulba":  # "anakin": JAX-native envs (docs/anakin.md)
        from experiments import anakin_experiment
        anakin_experiment.check_runtime(runtime)
        return anakin_experiment.run(config, spec.build, name=spec.name,
                                     agent_config=spec.config_cls, checks=spec.checks,
                                     **train_kwargs)
    return experiment.run(config, lambda network, _, num_updates: spec.build(
                              network, config, num_updates),
                          name=spec.name, agent_config=spec.config_cls, checks=spec.checks,
                          make_env=make_env, **train_kwargs)


if __name__ == "__main__":
    experiment.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_classic.py"))
