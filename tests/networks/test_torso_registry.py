"""Torso registry (networks.register_torso) and the MLP on dict observations."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

import networks


class TwoLayer(nn.Module):
    width: int = 8

    @nn.compact
    def __call__(self, obs):
        return nn.relu(nn.Dense(self.width)(obs["x"]))


@pytest.fixture
def registered():
    """Registers TwoLayer as "two_layer_test" and removes it afterwards."""
    networks.register_torso("two_layer_test", TwoLayer)
    yield "two_layer_test"
    networks.TORSOS.unregister("two_layer_test")


def test_registered_torso_is_built_by_build_network_with_torso_kwargs(registered):
    networks.register_torso(registered, TwoLayer)  # the same class again: no clash
    cfg = networks.NetworkConfig(torso=registered, torso_kwargs=dict(width=5))
    net = networks.build_network(cfg, spaces.Discrete(3))
    obs = {"x": np.ones((2, 4), np.float32)}
    params = net.init(jax.random.key(0), obs)
    assert params["params"]["torso"]["Dense_0"]["kernel"].shape == (4, 5)
    cfg = networks.NetworkConfig(torso=registered, torso_kwargs=dict(widht=5))
    with pytest.raises(TypeError, match=r"torso 'two_layer_test' \(TwoLayer\) cannot be built "
                                        r"with arguments \{'widht': 5\}"):
        networks.build_network(cfg, spaces.Discrete(3))


def test_register_torso_refuses_clashes():
    with pytest.raises(ValueError, match=r"torso 'mlp' is built in .* cannot be replaced"):
        networks.register_torso("mlp", TwoLayer)
    assert networks.TORSOS["mlp"] is networks.MLP
    networks.register_torso("clash_test", TwoLayer)
    try:
        with pytest.raises(ValueError, match=r"pass overwrite=True"):
            networks.register_torso("clash_test", networks.MLP)
        networks.register_torso("clash_test", networks.MLP, overwrite=True)
        assert networks.TORSOS["clash_test"] is networks.MLP
    finally:
        networks.TORSOS.unregister("clash_test")


@pytest.mark.parametrize("name,cls,error,match", [
    ("", TwoLayer, ValueError, r"torso name must be a non-empty string, got ''"),
    ("not_callable", 3, TypeError, r"torso 'not_callable' must be a flax module class"),
])
def test_register_torso_rejects_bad_names_and_classes(name, cls, error, match):
    with pytest.raises(error, match=match):
        networks.register_torso(name, cls)
    assert name not in networks.TORSOS


def test_torsos_read_like_a_mapping(registered):
    assert {"nature_cnn", "impala_resnet", "mlp", registered} <= set(networks.TORSOS)
    assert sorted(networks.TORSOS) == networks.TORSOS.names()
    assert networks.TORSOS[registered] is TwoLayer
    with pytest.raises(KeyError):
        networks.TORSOS["nope"]


def test_unknown_torso_lists_close_matches_and_how_to_add_one():
    with pytest.raises(ValueError, match=r"unknown torso 'mpl'\. Did you mean 'mlp'\?") as exc:
        networks.make_torso("mpl")
    assert "networks.register_torso" in str(exc.value)


def test_mlp_concatenates_dict_leaves():
    obs = {"a": np.ones((3, 2), np.float32), "b": np.ones((3, 2, 2), np.uint8)}
    mlp = networks.MLP(hidden_sizes=(4,))
    params = mlp.init(jax.random.key(0), obs)
    assert params["params"]["Dense_0"]["kernel"].shape == (2 + 4, 4)
    assert mlp.apply(params, obs).shape == (3, 4)
    flat = jnp.concatenate([obs["a"], obs["b"].reshape(3, 4).astype(jnp.float32)], -1)
    np.testing.assert_allclose(mlp.apply(params, obs), mlp.apply(params, flat), rtol=1e-6)
