"""The auto torso (networks/encoders.py): the encoder each observation leaf gets, the
shapes out, a one-key dict equal to the plain torso, overrides and their errors, and a run."""
import jax
import numpy as np
import pytest
from gymnasium import spaces

import networks
from networks import encoders
from networks.encoders import MultiInput, auto_encoder
from networks.torsos import MLP, MinAtarCNN, NatureCNN
from tests.fakes import sensors_env
from tests.helpers import quiet_config, read_metrics


@pytest.mark.parametrize("shape,dtype,torso", [
    ((4, 84, 84), np.uint8, "nature_cnn"),      # EnvPool's Atari stack, channels first
    ((84, 84, 3), np.uint8, "nature_cnn"),      # a gymnasium RGB camera, channels last
    ((84, 84), np.uint8, "nature_cnn"),         # a grayscale camera
    ((64, 48, 1), np.float32, "nature_cnn"),    # a float depth image
    ((10, 10, 4), np.bool_, "minatar_cnn"),     # MinAtar's grid
    ((16, 16, 1), np.uint8, "minatar_cnn"),     # an occupancy grid under 36 pixels
    ((2, 2, 3), np.float32, "mlp"),             # too small to convolve
    ((84, 84), np.float32, "mlp"),              # a float matrix is no image
    ((360,), np.float32, "mlp"),                # a LiDAR sweep
    ((), np.float32, "mlp"),                    # a speed
    ((3,), np.int32, "mlp"),                    # integers are cast
])
def test_each_leaf_gets_the_encoder_its_shape_and_dtype_call_for(shape, dtype, torso):
    assert auto_encoder(shape, dtype) == torso


def test_image_layout_finds_the_channel_axis():
    assert encoders.image_layout((4, 84, 84), np.uint8) == (True, (84, 84))
    assert encoders.image_layout((84, 80, 3), np.uint8) == (False, (84, 80))
    assert encoders.image_layout((84, 80), np.uint8) == (False, (84, 80))
    assert encoders.image_layout((360,), np.float32) is None


def _sensors(batch=3):
    rng = np.random.default_rng(0)
    return {"camera": rng.integers(0, 256, (batch, 4, 84, 84), dtype=np.uint8),
            "lidar": rng.normal(size=(batch, 32)).astype(np.float32),
            "speed": rng.normal(size=(batch,)).astype(np.float32)}


def test_shapes_out_and_parameters_named_by_key():
    obs = _sensors()
    torso = MultiInput()
    params = torso.init(jax.random.key(0), obs)["params"]
    assert set(params) == {"camera", "lidar", "speed", "fusion_0"}
    assert params["camera"]["Conv_0"]["kernel"].shape == (8, 8, 4, 32)  # 4 stacked frames in
    assert params["fusion_0"]["kernel"].shape == (512 + 64 + 64, 256)
    assert torso.apply({"params": params}, obs).shape == (3, 256)
    wide = MultiInput(fusion_sizes=(), mlp_hidden_sizes=(8,))  # no fusion: the concatenation
    assert wide.apply(wide.init(jax.random.key(0), obs), obs).shape == (3, 512 + 8 + 8)
    deep = MultiInput(fusion_sizes=(128, 32))
    assert deep.apply(deep.init(jax.random.key(0), obs), obs).shape == (3, 32)


def test_tuple_and_nested_observations_are_keyed_by_path():
    obs = ({"gps": np.zeros((2, 2), np.float32)}, np.zeros((2, 10, 10, 3), np.float32))
    torso = MultiInput()
    assert [c[:2] for c in torso.choices(obs)] == [("0/gps", "mlp"), ("1", "minatar_cnn")]
    assert set(torso.init(jax.random.key(0), obs)["params"]) == {"0_gps", "1", "fusion_0"}


@pytest.mark.parametrize("obs,plain", [
    (np.random.default_rng(1).normal(size=(5, 7)).astype(np.float32), MLP()),
    (np.random.default_rng(2).integers(0, 256, (2, 4, 84, 84), dtype=np.uint8), NatureCNN()),
    (np.random.default_rng(3).integers(0, 2, (4, 10, 10, 3)).astype(np.float32),
     MinAtarCNN()),
])
def test_a_one_key_dict_is_the_plain_torso_on_its_array(obs, plain):
    """One leaf, nothing to fuse: the same function of the same parameters, so the same
    outputs and the same gradients as the plain torso."""
    torso = MultiInput()
    params = torso.init(jax.random.key(0), {"x": obs})["params"]
    assert set(params) == {"x"}
    mine = lambda p: torso.apply({"params": {"x": p}}, {"x": obs})  # noqa: E731
    theirs = lambda p: plain.apply({"params": p}, obs)  # noqa: E731
    np.testing.assert_allclose(mine(params["x"]), theirs(params["x"]), rtol=1e-6, atol=1e-6)
    g_mine = jax.grad(lambda p: mine(p).sum())(params["x"])
    g_theirs = jax.grad(lambda p: theirs(p).sum())(params["x"])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 g_mine, g_theirs)
    plain_params = plain.init(jax.random.key(0), obs)["params"]  # the same tree, too
    assert jax.tree.structure(plain_params) == jax.tree.structure(params["x"])


@pytest.mark.parametrize("obs,plain", [
    (np.ones((2, 4), np.float32), MLP()),
    (np.zeros((2, 4, 84, 84), np.uint8), NatureCNN()),
])
def test_one_array_gets_the_plain_torso_itself(obs, plain):
    """`auto` on an observation that is one array is that array's torso: the same parameter
    names and the same initial values (so configs that moved from mlp to auto train alike)."""
    mine, theirs = MultiInput().init(jax.random.key(3), obs), plain.init(jax.random.key(3), obs)
    assert jax.tree.structure(mine) == jax.tree.structure(theirs)
    for a, b in zip(jax.tree.leaves(mine), jax.tree.leaves(theirs)):
        np.testing.assert_array_equal(a, b)


def test_the_vector_configs_default_to_auto_and_match_mlp(tmp_path):
    """impala_classic / ppo_classic / ppo_gymnax / ppo_mujoco name `auto`: on CartPole the
    actor-critic's initial parameters are bit-equal to the same config with torso mlp."""
    from experiments import wiring
    from experiments.configs import impala_classic, ppo_classic, ppo_gymnax, ppo_mujoco
    for module in (impala_classic, ppo_classic, ppo_gymnax, ppo_mujoco):
        assert module.get_config().network.torso == "auto", module.__name__
    obs = np.ones((3, 4), np.float32)
    params = []
    for torso in ("auto", "mlp"):
        config = quiet_config(ppo_classic.get_config(), tmp_path / torso,
                              **{"network.torso": torso})
        net = wiring.build_network(wiring.read(config, devices=False), spaces.Discrete(2))
        params.append(net.init(jax.random.key(0), obs))
    assert jax.tree.structure(params[0]) == jax.tree.structure(params[1])
    for a, b in zip(*map(jax.tree.leaves, params)):
        np.testing.assert_array_equal(a, b)


def test_uint8_pixels_reach_minatars_cnn_in_unit_range():
    grid = np.random.default_rng(4).choice([0, 128, 255], (2, 16, 16, 1)).astype(np.uint8)
    torso = MultiInput()
    params = torso.init(jax.random.key(0), {"grid": grid})["params"]
    out = torso.apply({"params": params}, {"grid": grid})
    ref = MinAtarCNN().apply({"params": params["grid"]}, grid.astype(np.float32) / 255.0)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_overrides_pick_the_encoder_of_a_key():
    obs = _sensors(2)
    torso = MultiInput(encoders=(("camera", "impala_resnet"), ("speed", "mlp")),
                       resnet_channels=(4,), mlp_hidden_sizes=(5,))
    assert [c[:2] for c in torso.choices(obs)] == [
        ("camera", "impala_resnet"), ("lidar", "mlp"), ("speed", "mlp")]
    params = torso.init(jax.random.key(0), obs)["params"]
    assert params["camera"]["Conv_0"]["kernel"].shape == (3, 3, 4, 4)
    assert params["speed"]["Dense_0"]["kernel"].shape == (1, 5)
    assert encoders.describe(torso, obs) == [
        "camera (4, 84, 84) uint8 -> impala_resnet", "lidar (32,) float32 -> mlp",
        "speed () float32 -> mlp"]


@pytest.mark.parametrize("text,match", [
    ("camera", r"'camera' is not KEY:TORSO"),
    ("camera:nature_cnn,camera:mlp", r"the key 'camera' is given twice"),
    ("camera:natur_cnn", r"unknown torso 'natur_cnn'.*Did you mean 'nature_cnn'"),
    ("camera:auto", r"auto encodes a whole observation"),
])
def test_malformed_encoders_are_refused_naming_the_part(text, match):
    with pytest.raises(ValueError, match=match):
        encoders.parse_encoders(text)
    with pytest.raises(ValueError, match=match):  # and as a config field, before any build
        networks.NetworkConfig(torso="auto", encoders=text)


def test_a_key_that_is_no_leaf_or_a_leaf_an_encoder_cannot_take_is_named():
    obs = _sensors(1)
    with pytest.raises(ValueError, match=r"no observation leaf 'camra'; the leaves are camera "
                                         r"\(4, 84, 84\), lidar \(32,\), speed \(\)"):
        encoders.describe(MultiInput(encoders=(("camra", "mlp"),)), obs)
    with pytest.raises(ValueError, match=r"lidar:nature_cnn cannot take the leaf 'lidar' of "
                                         r"shape \(32,\) \(float32\).*allowed for it: mlp"):
        encoders.describe(MultiInput(encoders=(("lidar", "nature_cnn"),)), obs)


def test_network_config_builds_it_and_refuses_encoders_for_another_torso():
    cfg = networks.NetworkConfig(torso="auto", encoders="camera:impala_resnet",
                                 fusion_sizes=[64], mlp_hidden_sizes=(16,))
    net = networks.build_network(cfg, spaces.Discrete(3))
    assert isinstance(net.torso, MultiInput)
    assert net.torso.encoders == (("camera", "impala_resnet"),)
    assert net.torso.fusion_sizes == (64,) and net.torso.mlp_hidden_sizes == (16,)
    params = net.init(jax.random.key(0), _sensors(2))
    logits, value = net.apply(params, _sensors(2))
    assert logits.shape == (2, 3) and value.shape == (2,)
    with pytest.raises(ValueError, match=r"encoders='camera:mlp' applies to "
                                         r"torso='auto'.*torso='mlp'"):
        networks.NetworkConfig(torso="mlp", encoders="camera:mlp")
    with pytest.raises(ValueError, match=r"fusion_sizes=\[0\] must be a tuple of positive"):
        networks.NetworkConfig(torso="auto", fusion_sizes=[0])


@pytest.mark.parametrize("agent", ["ppo", "impala"])
def test_sebulba_trains_the_driving_example_with_it(tmp_path, capsys, agent):
    """examples/driving's env (an occupancy grid and a sensor vector) with the built-in torso
    instead of the example's own, IMPALA and PPO as their classic configs ship: the start-up
    line says what each key got, and it trains."""
    import examples.driving  # noqa: F401 - registers Driving-v0
    from experiments import train
    from experiments.configs import impala_classic, ppo_classic
    module = ppo_classic if agent == "ppo" else impala_classic
    config = quiet_config(module.get_config(), tmp_path / "run", **{
        "env.name": "Driving-v0", "network.encoders": "state:mlp", "total_env_steps": 2048})
    result = train.run(config)
    assert result.env_steps == 2048
    assert ("encoders: grid (16, 16, 1) uint8 -> minatar_cnn; state (6,) float32 -> mlp"
            in capsys.readouterr().out)
    assert np.isfinite(read_metrics(tmp_path / "run")[-1]["loss/total"])


def test_parking_trains_under_sebulba_with_the_classic_configs_default(tmp_path, capsys):
    """EnvPool's Parking-v0 (a dict observation, continuous actions) with ppo_classic as it
    ships: each of its three keys gets an MLP, fused."""
    from experiments import train
    from experiments.configs import ppo_classic
    config = quiet_config(ppo_classic.get_config(), tmp_path / "run", **{
        "env.name": "Parking-v0", "total_env_steps": 2048, "checkpoint_keep": 0})
    result = train.run(config)
    assert result.env_steps == 2048
    assert ("encoders: achieved_goal (6,) float32 -> mlp; desired_goal (6,) float32 -> mlp; "
            "observation (6,) float32 -> mlp" in capsys.readouterr().out)
    assert np.isfinite(result.last_metrics["loss/total"])


def test_anakin_trains_a_dict_observation_env_with_it(tmp_path, capsys):
    result = sensors_env.train_run(tmp_path, total_env_steps=2 * 64 * 32)
    assert result.updates == 2
    assert ("encoders: camera (8, 8, 1) float32 -> minatar_cnn; sensors (3,) float32 -> mlp"
            in capsys.readouterr().out)


def test_a_discrete_leaf_of_the_observation_space_gets_an_embedding():
    space = spaces.Dict({"gear": spaces.Discrete(4, start=-1), "speed": spaces.Box(0, 1, (2,)),
                         "nested": spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (1,))))})
    assert encoders.discrete_leaves(space) == (("gear", 4, -1), ("nested/0", 2, 0))
    cfg = networks.NetworkConfig()
    torso = networks.build_network(cfg, spaces.Discrete(2), space).torso
    obs = {"gear": np.array([-1, 2], np.int32), "speed": np.zeros((2, 2), np.float32),
           "nested": (np.array([0, 1], np.int32), np.zeros((2, 1), np.float32))}
    assert encoders.describe(torso, obs) == [
        "gear () int32 -> embed (4 values)", "nested/0 () int32 -> embed (2 values)",
        "nested/1 (1,) float32 -> mlp", "speed (2,) float32 -> mlp"]
    params = torso.init(jax.random.key(0), obs)["params"]
    table = params["gear"]["Embed_0"]["embedding"]
    assert table.shape == (4, 16)
    out = torso.apply({"params": params}, obs)
    assert out.shape == (2, 256)
    # Each env reads the row of its own value: swapping two envs' values swaps their outputs.
    swapped = {**obs, "gear": np.array([2, -1], np.int32), "nested": (np.array([1, 0], np.int32),
                                                                     obs["nested"][1])}
    a = np.asarray(torso.apply({"params": params}, obs))
    b = np.asarray(torso.apply({"params": params}, swapped))
    np.testing.assert_allclose(a[::-1], b, atol=1e-6)
    assert not np.allclose(a[0], a[1])
    one = encoders.Embedding(4, -1, 16)  # value v is row v - start
    rows = one.apply({"params": params["gear"]}, np.array([-1, 2], np.int32))
    np.testing.assert_array_equal(rows, np.asarray(table)[[0, 3]])
    # Without the space (a caller that does not pass it) integers are a vector: an MLP.
    plain = networks.build_network(cfg, spaces.Discrete(2)).torso
    assert encoders.describe(plain, obs)[0] == "gear () int32 -> mlp"


def test_anakin_passes_the_observation_space_and_embeds_a_discrete_leaf(tmp_path, capsys):
    result = sensors_env.train_run(tmp_path, total_env_steps=64 * 32, gear=True)
    assert result.updates == 1
    assert "gear () int32 -> embed (3 values)" in capsys.readouterr().out
