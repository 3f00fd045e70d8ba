"""Torso registry (networks.register_torso) and the MLP on dict observations."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from gymnasium import spaces

import networks
from sebulba import experiment


class TwoLayer(nn.Module):
    width: int = 8

    @nn.compact
    def __call__(self, obs):
        return nn.relu(nn.Dense(self.width)(obs["x"]))


def test_registered_torso_is_built_by_make_network_with_torso_kwargs():
    networks.register_torso("two_layer_test", TwoLayer)
    networks.register_torso("two_layer_test", TwoLayer)  # the same class again: no clash
    config = ml_collections.ConfigDict(dict(
        env=dict(name="t"), network=dict(torso="two_layer_test", shared_torso=True,
                                         torso_kwargs=dict(width=5))))
    net = experiment.make_network(config, spaces.Discrete(3))
    obs = {"x": np.ones((2, 4), np.float32)}
    params = net.init(jax.random.key(0), obs)
    assert params["params"]["torso"]["Dense_0"]["kernel"].shape == (4, 5)
    config.network.torso_kwargs = dict(widht=5)
    with pytest.raises(TypeError, match=r"torso 'two_layer_test' \(TwoLayer\) cannot be built "
                                        r"with arguments \{'widht': 5\}"):
        experiment.make_network(config, spaces.Discrete(3))


def test_register_torso_refuses_clashes():
    with pytest.raises(ValueError, match=r"torso 'mlp' is already registered"):
        networks.register_torso("mlp", TwoLayer)
    networks.register_torso("clash_test", TwoLayer)
    with pytest.raises(ValueError, match=r"pass overwrite=True"):
        networks.register_torso("clash_test", networks.MLP)
    networks.register_torso("clash_test", networks.MLP, overwrite=True)
    assert networks.TORSOS["clash_test"] is networks.MLP


def test_mlp_concatenates_dict_leaves():
    obs = {"a": np.ones((3, 2), np.float32), "b": np.ones((3, 2, 2), np.uint8)}
    mlp = networks.MLP(hidden_sizes=(4,))
    params = mlp.init(jax.random.key(0), obs)
    assert params["params"]["Dense_0"]["kernel"].shape == (2 + 4, 4)
    assert mlp.apply(params, obs).shape == (3, 4)
    flat = jnp.concatenate([obs["a"], obs["b"].reshape(3, 4).astype(jnp.float32)], -1)
    np.testing.assert_allclose(mlp.apply(params, obs), mlp.apply(params, flat), rtol=1e-6)
