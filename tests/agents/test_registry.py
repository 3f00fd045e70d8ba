"""Agent registry and experiments/train.py's choice of agent."""
import dataclasses

import ml_collections
import pytest

import agents
from agents.registry import infer_agent
from experiments import train
from experiments.configs import impala_classic, ppo_classic
from sebulba.validation import ConfigError


def test_train_picks_the_agent_by_name_or_by_fields():
    assert train.agent_spec(ppo_classic.get_config()).name == "ppo"       # inferred
    assert train.agent_spec(impala_classic.get_config()).name == "impala"
    config = impala_classic.get_config()
    config.agent_name = "impalla"
    with pytest.raises(ConfigError, match=r"agent_name='impalla': unknown agent 'impalla'. "
                                          r"Did you mean impala\?"):
        train.agent_spec(config)
    config = impala_classic.get_config()
    config.agent = ml_collections.ConfigDict(dict(lr=1.0))
    with pytest.raises(ConfigError, match=r"no agent_name.*add `config.agent_name"):
        train.agent_spec(config)


@dataclasses.dataclass(frozen=True)
class _Cfg:
    step_size: float = 0.1


def _build(network, config, num_updates):
    raise AssertionError("registry tests never build the agent")


def test_register_agent_checks_and_infers():
    spec = agents.register_agent("registry_test", _build, config_cls=_Cfg)
    assert agents.get_agent("registry_test") is spec
    assert infer_agent(["step_size"]) is spec
    with pytest.raises(ValueError, match=r"already registered"):
        agents.register_agent("registry_test", lambda *a: None)
    with pytest.raises(TypeError, match=r"config_cls must be a dataclass"):
        agents.register_agent("registry_test2", _build, config_cls=dict)
