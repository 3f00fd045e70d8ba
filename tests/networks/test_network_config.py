"""The network section's schema (networks.NetworkConfig) and builder (networks.build_network)."""
import dataclasses
import math
from typing import Any

import flax.linen as nn
import jax
import ml_collections
import numpy as np
import pytest
from gymnasium import spaces

import networks
from networks import NetworkConfig, build_network
from podracer import validation
from podracer.schema import read_section


class Nested(nn.Module):
    """A user torso whose argument is a nested structure (as JSON or ml_collections give it)."""
    layers: Any = ()
    scale: float = 1.0

    @nn.compact
    def __call__(self, obs):
        return nn.Dense(sum(len(layer) for layer in self.layers))(obs) * self.scale


@pytest.fixture
def nested():
    networks.register_torso("nested_test", Nested)
    yield "nested_test"
    networks.TORSOS.unregister("nested_test")


@pytest.mark.parametrize("values,match", [
    (dict(torso="mpl"), r"^torso='mpl': unknown torso 'mpl'\. Did you mean 'mlp'\?"),
    (dict(torso=3), r"^torso=3: unknown torso 3\."),
    (dict(mlp_hidden_sizes=()), r"^mlp_hidden_sizes=\(\) must be a non-empty tuple of positive"),
    (dict(mlp_hidden_sizes=(64, 0)), r"^mlp_hidden_sizes=\(64, 0\) must be"),
    (dict(mlp_hidden_sizes=(64, 1.5)), r"^mlp_hidden_sizes=\(64, 1\.5\) must be"),
    (dict(mlp_hidden_sizes=64), r"^mlp_hidden_sizes=64 must be"),
    (dict(resnet_channels=[16, True]), r"^resnet_channels=\[16, True\] must be"),
    (dict(resnet_channels=[]), r"^resnet_channels=\[\] must be"),
    (dict(continuous_bounds="squash"),
     r"^continuous_bounds='squash' must be one of \('clip', 'tanh'\)"),
    (dict(init_log_std=math.nan), r"^init_log_std=nan must be a finite number"),
    (dict(lstm_size=-1), r"^lstm_size=-1 must be an integer >= 0"),
    (dict(lstm_size=2.0), r"^lstm_size=2\.0 must be an integer >= 0"),
    (dict(lstm_size=True), r"^lstm_size=True must be an integer >= 0"),
    (dict(torso_kwargs=[("width", 5)]), r"^torso_kwargs=\[\('width', 5\)\] must be a dict"),
    (dict(torso_kwargs={1: 2}), r"^torso_kwargs=\{1: 2\} must be a dict"),
])
def test_each_rule_names_the_field_and_value(values, match):
    with pytest.raises(ValueError, match=match):
        NetworkConfig(**values)


def test_read_section_prefixes_the_section():
    with pytest.raises(validation.ConfigError, match=r"^network\.lstm_size=-1 must be"):
        read_section(NetworkConfig, {"lstm_size": -1}, "network")
    with pytest.raises(validation.ConfigError, match=r"^network\.torso='x': unknown torso"):
        read_section(NetworkConfig, {"torso": "x"}, "network")
    with pytest.raises(validation.ConfigError, match=r"^network\.lstm is not a field of "
                                                     r"NetworkConfig.*Did you mean 'lstm_size'"):
        read_section(NetworkConfig, {"lstm": 4}, "network")
    with pytest.raises(validation.ConfigError, match=r"^network\.torso_init='xavier' must be "
                                                     r"one of \('reference', 'lecun'\)"):
        read_section(NetworkConfig, {"torso_init": "xavier"}, "network")


def test_lists_and_config_dicts_are_normalised():
    # JSON (config.json, checkpoints) gives lists; ml_collections gives tuples and ConfigDicts.
    cfg = read_section(NetworkConfig, dict(
        mlp_hidden_sizes=[32, np.int64(16)], resnet_channels=[8],
        torso_kwargs=ml_collections.ConfigDict(dict(activation_scale=dict(a=[1, 2])))),
        "network")
    assert cfg.mlp_hidden_sizes == (32, 16) and type(cfg.mlp_hidden_sizes[1]) is int
    assert cfg.resnet_channels == (8,)
    assert cfg.torso_kwargs == {"activation_scale": {"a": [1, 2]}}
    assert type(cfg.torso_kwargs) is dict and type(cfg.torso_kwargs["activation_scale"]) is dict
    assert cfg == NetworkConfig(mlp_hidden_sizes=(32, 16), resnet_channels=(8,),
                                torso_kwargs={"activation_scale": {"a": [1, 2]}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lstm_size = 3  # type: ignore[misc]


def test_defaults_are_a_valid_feed_forward_auto_torso():
    cfg = NetworkConfig()
    assert (cfg.torso, cfg.mlp_hidden_sizes, cfg.lstm_size, cfg.torso_kwargs) == (
        "auto", (64, 64), 0, {})
    assert NetworkConfig().torso_kwargs is not cfg.torso_kwargs  # no shared mutable default


def test_mlp_takes_its_sizes_and_torso_kwargs_override_them():
    net = build_network(NetworkConfig(torso="mlp", mlp_hidden_sizes=[32, 16],
                                      shared_torso=False), spaces.Discrete(4))
    assert type(net) is networks.ActorCritic and net.shared_torso is False
    assert type(net.torso) is networks.MLP and net.torso.hidden_sizes == (32, 16)
    assert net.dist == networks.Categorical(4)
    net = build_network(NetworkConfig(torso="mlp", torso_kwargs={"hidden_sizes": [8]}),
                        spaces.Discrete(4))
    assert net.torso.hidden_sizes == (8,)
    params = net.init(jax.random.key(0), np.ones((2, 3), np.float32))
    assert params["params"]["torso"]["Dense_0"]["kernel"].shape == (3, 8)


def test_impala_resnet_takes_its_channels_and_torso_kwargs():
    cfg = NetworkConfig(torso="impala_resnet", resnet_channels=(4, 8),
                        torso_kwargs=dict(hidden=32, channels_first=False))
    torso = build_network(cfg, spaces.Discrete(2)).torso
    assert type(torso) is networks.ImpalaResNet
    assert (torso.channels, torso.hidden, torso.channels_first) == ((4, 8), 32, False)
    # mlp_hidden_sizes belong to the mlp torso only: nature_cnn gets no size kwargs.
    assert type(build_network(NetworkConfig(torso="nature_cnn"), spaces.Discrete(2)).torso
                ) is networks.NatureCNN


def test_registered_torso_gets_nested_torso_kwargs_as_hashable_tuples(nested):
    cfg = NetworkConfig(torso=nested, torso_kwargs={"layers": [[4, 2], [3]], "scale": 0.5})
    net = build_network(cfg, spaces.Discrete(2))
    assert type(net.torso) is Nested
    assert net.torso.layers == ((4, 2), (3,)) and net.torso.scale == 0.5
    hash(net.torso.layers)  # flax module fields must be hashable
    params = net.init(jax.random.key(0), np.ones((1, 5), np.float32))
    assert params["params"]["torso"]["Dense_0"]["kernel"].shape == (5, 3)


def test_lstm_size_builds_a_recurrent_actor_critic():
    net = build_network(NetworkConfig(lstm_size=16, shared_torso=False), spaces.Discrete(3))
    assert type(net) is networks.RecurrentActorCritic and networks.is_recurrent(net)
    assert net.lstm_size == 16 and net.shared_torso is False
    assert not networks.is_recurrent(build_network(NetworkConfig(), spaces.Discrete(3)))


def test_box_actions_take_the_continuous_fields():
    cfg = NetworkConfig(continuous_bounds="tanh", state_dependent_std=True, init_log_std=-0.5)
    dist = build_network(cfg, spaces.Box(-1.0, 1.0, (2,), np.float32)).dist
    assert type(dist) is networks.DiagGaussian
    assert (dist.bounds, dist.state_dependent_std, dist.init_log_std) == ("tanh", True, -0.5)
    assert (dist.low, dist.high) == ((-1.0, -1.0), (1.0, 1.0))


def test_unsupported_action_space_raises_from_spaces_error_unchanged():
    space = spaces.Discrete(3, start=1)
    with pytest.raises(ValueError) as expected:
        networks.from_space(space)
    with pytest.raises(ValueError) as got:
        build_network(NetworkConfig(), space)
    assert str(got.value) == str(expected.value)


def test_build_network_needs_a_network_config():
    with pytest.raises(TypeError, match=r"takes a networks\.NetworkConfig, got dict"):
        build_network({"torso": "mlp"}, spaces.Discrete(2))
