"""The agent builder contract (agents/builders.py): specs by name, the built-in IMPALA and PPO
specs, and their builders."""
import dataclasses
import subprocess
import sys

import pytest

import agents
import agents.impala as impala
import agents.ppo as ppo
from agents.builders import AGENTS
from podracer.agent import Agent
from podracer.batch import BatchShape
from tests.helpers import ACTION_SPACES, small_network


@dataclasses.dataclass(frozen=True)
class _Cfg:
    step_size: float = 0.1


def _build(network, agent_config, batch, num_updates):
    raise AssertionError("registry tests never build the agent")


def _other_build(network, agent_config, batch, num_updates):
    raise AssertionError("registry tests never build the agent")


@pytest.fixture
def name():
    yield "builders_test"
    AGENTS.unregister("builders_test")


def test_builtins_are_listed_and_loaded_by_name_without_importing_them_first():
    assert {"impala", "ppo"} <= set(agents.registered_agents())
    assert agents.get_agent("impala") is impala.SPEC and agents.get_agent("ppo") is ppo.SPEC
    # `import agents` alone imports no agent package: the specs load on first use.
    code = ("import sys, agents; assert 'agents.ppo' not in sys.modules; "
            "spec = agents.get_agent('ppo'); assert 'agents.ppo' in sys.modules; "
            "print(spec.name, spec.config_cls.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["ppo", "PPOConfig"]


def test_builtin_specs_declare_config_and_checks():
    assert (impala.SPEC.name, impala.SPEC.config_cls, impala.SPEC.checks,
            impala.SPEC.describe) == ("impala", impala.ImpalaConfig,
                                      (impala.check_minibatches,), impala.describe)
    assert (ppo.SPEC.name, ppo.SPEC.config_cls, ppo.SPEC.checks, ppo.SPEC.describe) == (
        "ppo", ppo.PPOConfig, (ppo.check_minibatches,), ppo.describe)


def test_unknown_agent_names_the_close_matches_and_every_agent():
    with pytest.raises(ValueError, match=r"unknown agent 'impalla'\. Did you mean 'impala'.*"
                                         r"Registered agents: .*impala.*ppo.*register_agent"):
        agents.get_agent("impalla")


def test_register_agent(name):
    spec = agents.register_agent(name, _build, config_cls=_Cfg)
    assert agents.get_agent(name) is spec and name in agents.registered_agents()
    assert (spec.name, spec.build, spec.config_cls, spec.checks) == (name, _build, _Cfg, ())
    # The same builder again (a module imported twice): the registered spec, no error.
    assert agents.register_agent(name, _build, config_cls=_Cfg) is spec
    with pytest.raises(ValueError, match=rf"agent '{name}' is already registered"):
        agents.register_agent(name, _other_build, config_cls=_Cfg)
    replaced = agents.register_agent(name, _other_build, config_cls=_Cfg, overwrite=True)
    assert agents.get_agent(name) is replaced and replaced.build is _other_build


def test_builtin_agents_cannot_be_replaced():
    with pytest.raises(ValueError, match=r"agent 'ppo' is built in .* cannot be replaced"):
        agents.register_agent("ppo", _build, config_cls=_Cfg, overwrite=True)
    assert agents.get_agent("ppo") is ppo.SPEC


def test_bad_specs_fail_where_they_are_written(name):
    with pytest.raises(TypeError, match=r"config_cls must be a dataclass"):
        agents.register_agent(name, _build, config_cls=dict)
    with pytest.raises(TypeError, match=r"config_cls"):
        agents.register_agent(name, _build)  # required: the config is type-checked by it
    with pytest.raises(TypeError, match=r"build must be callable"):
        agents.AgentSpec(name, None, _Cfg)
    with pytest.raises(TypeError, match=r"checks must be callables"):
        agents.AgentSpec(name, _build, _Cfg, checks=("not a function",))
    with pytest.raises(ValueError, match=r"agent name must be a non-empty string"):
        agents.register_agent("", _build, config_cls=_Cfg)
    assert name not in agents.registered_agents()


def _network():
    return small_network(ACTION_SPACES["discrete"], hidden_sizes=(8,))


def _capture(monkeypatch, module):
    """Replaces `module.make_agent` by a recorder of what the spec's builder passes."""
    calls = []
    monkeypatch.setattr(module, "make_agent", lambda network, cfg, num_updates, batch_envs:
                        calls.append((network, cfg, num_updates, batch_envs)) or "agent")
    return calls


# 2 processes x 3 learner devices x 4 env columns, T = 5: 24 envs, 120 samples per update.
BATCH = BatchShape(envs_per_learner=4, unroll_length=5, learner_devices=3, processes=2,
                   on_policy=False)


def test_impala_builder_passes_the_runs_batch_and_its_minibatch_constants(monkeypatch):
    calls = _capture(monkeypatch, impala)
    net, cfg = _network(), impala.ImpalaConfig(reward_scaling=True, num_minibatches=2)
    assert impala.SPEC.build(net, cfg, BATCH, 7) == "agent"
    (_, built, updates, batch_envs), = calls
    assert (updates, batch_envs) == (7, 24)  # every process's columns
    # The rule of agents/impala/config.py for n = 120 / 2 samples per gradient step.
    assert built.max_grad_norm == pytest.approx(40 / 60)
    assert built.rmsprop_eps == pytest.approx((0.01 / 60) ** 2)
    calls.clear()
    impala.SPEC.build(net, impala.ImpalaConfig(max_grad_norm=3.0, rmsprop_eps=1e-5), BATCH, 7)
    assert (calls[0][1].max_grad_norm, calls[0][1].rmsprop_eps) == (3.0, 1e-5)  # as given


@pytest.mark.parametrize("synchronous,correction", [(True, "none"), (False, "vtrace")])
def test_ppo_builder_resolves_the_correction_for_the_runs_data(monkeypatch, synchronous,
                                                              correction):
    calls = _capture(monkeypatch, ppo)
    batch = dataclasses.replace(BATCH, on_policy=synchronous)
    ppo.SPEC.build(_network(), ppo.PPOConfig(correction="auto"), batch, 5)
    (_, cfg, num_updates, batch_envs), = calls
    assert (cfg.correction, num_updates, batch_envs) == (correction, 5, 24)
    calls.clear()
    ppo.SPEC.build(_network(), ppo.PPOConfig(correction="none"), batch, 5)
    assert calls[0][1].correction == "none"  # an explicit choice is kept


@pytest.mark.parametrize("module,cfg", [(impala, impala.ImpalaConfig()),
                                        (ppo, ppo.PPOConfig())])
def test_builders_return_an_agent(module, cfg):
    agent = module.SPEC.build(_network(), cfg, BATCH, 10)
    assert isinstance(agent, Agent) and agent.initial_core_state is None


def test_impala_needs_its_constants_or_the_batch():
    with pytest.raises(ValueError, match=r"rmsprop_eps=None and max_grad_norm=None: None means "
                                         r"the rule from the minibatch size"):
        impala.make_agent(_network(), impala.ImpalaConfig(), 10)


def test_the_describe_lines_say_how_the_batch_is_split():
    line = impala.describe(impala.ImpalaConfig(num_minibatches=2), BATCH)
    assert "2 gradient step(s) per update of n = 60 samples" in line
    assert "max_grad_norm 0.666667, rmsprop_eps 2.77778e-08" in line
    line = ppo.describe(ppo.PPOConfig(num_epochs=3, num_minibatches=4), BATCH)
    assert "3 epoch(s) x 4 minibatch(es) of n = 30 samples" in line and "= 12 gradient" in line
