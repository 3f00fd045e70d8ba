"""experiments/wiring: the config schema (defaults generated from the section dataclasses),
reading a config into checked sections, choosing the agent, and the one way to build."""
import dataclasses
import json
import os

import gymnasium
import ml_collections

import pytest

import agents
import networks
from experiments import wiring
from experiments.configs import common, impala_atari, impala_classic, ppo_classic
from podracer import schema
from podracer.distributed import DistributedConfig
from podracer.logging import WandbConfig
from podracer.validation import ConfigError
from sebulba.envs import EnvConfig
from sebulba.runtime_config import RuntimeConfig


def test_every_section_default_comes_from_its_dataclass():
    config = ml_collections.ConfigDict()
    common.runtime_fields(config)
    for cls in (RuntimeConfig, wiring.RunConfig):
        for f in dataclasses.fields(cls):
            value = config[f.name]
            default = getattr(cls(), f.name)
            assert (value == default or (value is None and default is None)
                    or (isinstance(default, tuple) and tuple(value) == default)), f.name
    assert config.distributed.to_dict() == dataclasses.asdict(DistributedConfig())
    assert config.wandb.to_dict() == dataclasses.asdict(WandbConfig())
    assert common.atari_env("Pong-v5").to_dict() == dataclasses.asdict(EnvConfig("Pong-v5"))
    net = common.network_fields("mlp", shared_torso=False).to_dict()
    assert net == dataclasses.asdict(networks.NetworkConfig(torso="mlp", shared_torso=False))


def test_a_none_default_is_a_typed_placeholder_the_command_line_can_set():
    config = ml_collections.ConfigDict()
    common.runtime_fields(config)
    assert config.stop_at_return is None
    config.stop_at_return = 21.0  # a float placeholder: no type error
    with pytest.raises(TypeError):
        config.stop_at_return = "high"
    config.distributed.local_device_ids = (0, 1)


def test_read_gives_typed_sections(tmp_path):
    config = ppo_classic.get_config()
    config.run_dir = str(tmp_path / "run")
    sections = wiring.read(config, devices=False)
    assert isinstance(sections.runtime, RuntimeConfig) and sections.runtime.num_envs == 16
    assert isinstance(sections.env, EnvConfig) and sections.env.name == "CartPole-v1"
    assert isinstance(sections.network, networks.NetworkConfig)
    assert sections.network.mlp_hidden_sizes == (64, 64)
    assert isinstance(sections.agent, sections.spec.config_cls)
    assert sections.spec.name == "ppo" and sections.run.run_dir == str(tmp_path / "run")


def test_the_agent_is_the_configs_or_the_entry_points(tmp_path):
    config = impala_classic.get_config()
    assert wiring.agent_spec(config).name == "impala"
    assert wiring.agent_spec(config, "impala").name == "impala"
    with pytest.raises(ConfigError, match=r"agent_name='impala', but this entry point trains "
                                          r"'ppo'.*experiments/train.py"):
        wiring.agent_spec(config, "ppo")
    config.agent_name = "impal"
    with pytest.raises(ConfigError, match=r"agent_name='impal': unknown agent 'impal'\. "
                                          r"Did you mean 'impala'\?"):
        wiring.agent_spec(config)
    config.agent_name = ""
    with pytest.raises(ConfigError, match=r"names no agent.*'impala'.*'ppo'"):
        wiring.agent_spec(config)


def test_a_spec_given_directly_is_built(tmp_path):
    built = []
    base = agents.get_agent("impala")

    def build(network, cfg, batch, num_updates):
        built.append((cfg, batch, int(num_updates)))
        return base.build(network, cfg, batch, num_updates)
    spec = dataclasses.replace(base, name="mine", build=build)
    config = impala_classic.get_config()
    _, _, agent = wiring.build_from_config(wiring.read(config, agent=spec, devices=False),
                                           gymnasium.spaces.Discrete(2), num_updates=7)
    assert built and built[0][2] == 7 and built[0][1].batch_envs == config.num_envs
    assert callable(agent.learn_step)


def test_an_unknown_field_of_a_section_is_named(tmp_path):
    config = impala_atari.get_config()
    with config.network.unlocked():
        config.network.lstm = 8
    with pytest.raises(ConfigError, match=r"network\.lstm is not a field of NetworkConfig.*"
                                          r"Did you mean.*lstm_size"):
        wiring.read(config, devices=False)


def test_a_missing_section_is_named():
    config = impala_classic.get_config()
    del config["network"]
    with pytest.raises(ConfigError, match=r"the config has no `network` section"):
        wiring.read(config, devices=False)


def test_build_from_config_names_the_env_for_an_unsupported_action_space():
    config = impala_classic.get_config()
    with pytest.raises(ValueError, match=r"^CartPole-v1: "):
        wiring.build_from_config(config, gymnasium.spaces.Text(5))


def test_schema_config_dict_round_trips_through_read():
    rc = RuntimeConfig(num_envs=8, stop_at_return=3.0)
    values = schema.section_values(RuntimeConfig, schema.config_dict(rc))
    assert RuntimeConfig(**values) == rc


def test_an_auto_layout_is_resolved_once_and_recorded(tmp_path):
    """num_actor_threads=0 (auto) is resolved when the config is read (sebulba.layout.resolve)
    and recorded in the sections' config (config.json, checkpoints), the caller's ConfigDict
    left as it was given; the batch the agent's checks see is num_envs whatever the threads
    (PPO's rule: 16 envs never split in 3)."""
    config = ppo_classic.get_config()
    config.num_actor_threads = 0
    config.run_dir = str(tmp_path / "run")
    given = config.to_json()
    sections = wiring.read(config, devices=False)
    assert config.to_json() == given  # config flows one way: read does not write into it
    recorded = json.loads(sections.config.to_json())
    assert recorded["num_actor_threads"] == sections.runtime.num_actor_threads >= 1
    assert recorded["env"]["num_threads"] == sections.env.num_threads >= 1
    assert {k: v for k, v in recorded.items() if k not in ("num_actor_threads", "env")} == {
        k: v for k, v in json.loads(given).items() if k not in ("num_actor_threads", "env")}
    assert "num_actor_threads" in sections.layout.auto
    config.agent.num_minibatches = 3
    with pytest.raises(ConfigError, match=r"agent\.num_minibatches=3 must divide the 16 "):
        wiring.read(config, devices=False)


def test_a_step_failing_before_training_still_closes_the_logger(tmp_path, monkeypatch):
    # The runtime closes the logger when it ends; a failure before it starts must close it too
    # (an open tensorboardX writer is closed at exit, which on Python 3.12 raises "can't create
    # new thread at interpreter shutdown" after the real error).
    from experiments.wiring import run_files
    closed = []
    real_close = run_files.MetricsLogger.close
    monkeypatch.setattr(run_files.MetricsLogger, "close",
                        lambda self: (closed.append(self._writer is not None), real_close(self)))

    def broken_write_config(self):
        raise OSError("disk full")
    monkeypatch.setattr(run_files.RunFiles, "write_config", broken_write_config)
    config = impala_classic.get_config()
    config.run_dir = str(tmp_path / "run")
    with pytest.raises(OSError, match="disk full"):
        wiring.run(config)
    assert closed[:1] == [True], closed  # closed once with its writer open, then idempotent


def test_a_run_leaves_its_config_as_given_and_records_the_config_that_ran(
        impala_classic_config):
    """Config flows one way: the run reads the caller's ConfigDict once (sections.read) and
    never writes into it; config.json and the checkpoints' metadata hold the config as it ran,
    the auto layout resolved."""
    from podracer import checkpoint
    config = impala_classic_config(total_env_steps=512, num_actor_threads=0,
                                   **{"env.num_threads": 0})
    given = config.to_json()
    wiring.run(config)
    assert config.to_json() == given
    with open(os.path.join(config.run_dir, "config.json")) as f:
        recorded = json.load(f)
    assert recorded["num_actor_threads"] >= 1 and recorded["env"]["num_threads"] >= 1
    expected = json.loads(given)
    expected["num_actor_threads"] = recorded["num_actor_threads"]
    expected["env"]["num_threads"] = recorded["env"]["num_threads"]
    assert recorded == expected
    newest = checkpoint.resolve(config.run_dir)
    assert checkpoint.load_metadata(newest)["config"] == recorded
