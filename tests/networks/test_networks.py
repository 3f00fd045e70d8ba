"""Tests for networks/: shapes, uint8 scaling, layout handling, param count."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from networks import MLP, ActorCritic, ImpalaResNet, MinAtarCNN, NatureCNN, make_torso
from networks.torsos import preprocess_frames

NUM_ACTIONS = 6


def _frames(batch: int = 2, seed: int = 0) -> np.ndarray:
    """Random uint8 frames in EnvPool's [B, C, H, W] layout."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(batch, 4, 84, 84), dtype=np.uint8)


def _count(params) -> int:
    return sum(int(np.prod(p.shape)) for p in jax.tree_util.tree_leaves(params))


@pytest.mark.parametrize(
    "name,obs",
    [
        ("nature_cnn", _frames()),
        ("impala_resnet", _frames()),
        ("mlp", np.ones((3, 4), np.float32)),
    ],
)
def test_actor_critic_shapes_and_dtypes(name, obs):
    net = ActorCritic(torso=make_torso(name), num_actions=NUM_ACTIONS)
    params = net.init(jax.random.PRNGKey(0), obs)
    logits, value = net.apply(params, obs)
    batch = obs.shape[0]
    assert logits.shape == (batch, NUM_ACTIONS) and logits.dtype == jnp.float32
    assert value.shape == (batch,) and value.dtype == jnp.float32
    assert np.all(np.isfinite(logits)) and np.all(np.isfinite(value))


@pytest.mark.parametrize("torso_cls", [NatureCNN, ImpalaResNet])
def test_uint8_and_float_inputs_scale_identically(torso_cls):
    # Both dtypes must go through the same /255 path, else a float caller
    # (e.g. a replay buffer) would see a 255x larger input.
    x = _frames()
    net = torso_cls()
    params = net.init(jax.random.PRNGKey(0), x)
    out_u8 = net.apply(params, x)
    out_f32 = net.apply(params, x.astype(np.float32))
    np.testing.assert_allclose(out_u8, out_f32, rtol=1e-5, atol=1e-5)


def test_preprocess_frames_scales_to_unit_range_and_nhwc():
    # The shared helper is the one place scaling/layout happen: all-255
    # uint8 must become exactly 1.0, channels moved last.
    x = np.full((2, 4, 84, 84), 255, np.uint8)
    y = preprocess_frames(x, channels_first=True)
    assert y.shape == (2, 84, 84, 4) and y.dtype == jnp.float32
    np.testing.assert_array_equal(y, np.ones((2, 84, 84, 4), np.float32))


@pytest.mark.parametrize("torso_cls", [NatureCNN, ImpalaResNet])
def test_channels_first_matches_channels_last(torso_cls):
    x = _frames()
    nchw, nhwc = torso_cls(channels_first=True), torso_cls(channels_first=False)
    params = nchw.init(jax.random.PRNGKey(1), x)
    out_first = nchw.apply(params, x)
    out_last = nhwc.apply(params, np.transpose(x, (0, 2, 3, 1)))
    np.testing.assert_allclose(out_first, out_last, rtol=1e-5, atol=1e-5)


def test_nature_cnn_param_count():
    params = NatureCNN().init(jax.random.PRNGKey(0), _frames(batch=1))
    expected = (
        (4 * 32 * 64 + 32)  # conv1 8x8, 4 -> 32
        + (32 * 64 * 16 + 64)  # conv2 4x4, 32 -> 64
        + (64 * 64 * 9 + 64)  # conv3 3x3, 64 -> 64
        + (3136 * 512 + 512)  # dense 7*7*64 -> 512
    )
    assert _count(params) == expected == 1_684_128


def test_impala_resnet_embedding_size():
    net = ImpalaResNet(channels=(8, 16), hidden=32)
    x = _frames()
    out = net.apply(net.init(jax.random.PRNGKey(0), x), x)
    assert out.shape == (2, 32)


def test_mlp_flattens_and_casts():
    net = MLP(hidden_sizes=(16, 8))
    x = np.ones((3, 2, 2), np.int32)  # trailing dims flattened to 4
    out = net.apply(net.init(jax.random.PRNGKey(0), x), x)
    assert out.shape == (3, 8) and out.dtype == jnp.float32


def test_make_torso_kwargs_and_unknown_name():
    assert make_torso("mlp", hidden_sizes=(32,)).hidden_sizes == (32,)
    with pytest.raises(ValueError, match="'resnet50'") as exc:
        make_torso("resnet50")
    for allowed in ("nature_cnn", "impala_resnet", "mlp"):
        assert allowed in str(exc.value)


def _kernels(params, kind: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(kernel as [fan_in, fan_out], bias) of every layer whose name starts with `kind`."""
    out = []
    for name, layer in sorted(params["params"].items()):
        if name.startswith(kind):
            k = np.asarray(layer["kernel"], np.float64)
            out.append((k.reshape(-1, k.shape[-1]), np.asarray(layer["bias"])))
    return out


def _is_orthogonal(kernel: np.ndarray, gain: float) -> bool:
    """Columns orthogonal with norm `gain` (fan_in >= fan_out for every layer checked here),
    what torch's orthogonal_ gives cleanrl's layer_init up to the transpose."""
    gram = kernel.T @ kernel
    return np.allclose(gram, gain ** 2 * np.eye(kernel.shape[1]), atol=1e-4 * gain ** 2)


def test_nature_cnn_reference_init_is_cleanrls_layer_init():
    """cleanrl ppo_atari_envpool.py (fe8d8a0) `layer_init`: orthogonal(sqrt 2), zero bias, on
    all three convs and the 512 dense layer; "lecun" keeps flax's default (not orthogonal)."""
    obs = _frames(1)
    ref = NatureCNN().init(jax.random.PRNGKey(0), obs)
    layers = _kernels(ref, "Conv") + _kernels(ref, "Dense")
    assert len(layers) == 4
    for kernel, bias in layers:
        assert _is_orthogonal(kernel, np.sqrt(2)) and not bias.any()
    lecun = NatureCNN(layer_init="lecun").init(jax.random.PRNGKey(0), obs)
    for kernel, _ in _kernels(lecun, "Conv") + _kernels(lecun, "Dense"):
        assert not _is_orthogonal(kernel, np.sqrt(2))
        # lecun_normal: variance 1/fan_in (truncated normal); within 15% on these sizes
        assert np.var(kernel) * kernel.shape[0] == pytest.approx(1.0, rel=0.15)


def test_impala_resnet_reference_init_is_cleanbas():
    """cleanba cleanba_impala.py (d1f8979) `Network`: flax's default convs, the dense layer
    orthogonal(sqrt 2) with zero bias."""
    obs = _frames(1)
    params = ImpalaResNet().init(jax.random.PRNGKey(0), obs)
    (dense, bias), = _kernels(params, "Dense")
    assert _is_orthogonal(dense, np.sqrt(2)) and not bias.any()
    lecun = ImpalaResNet(layer_init="lecun").init(jax.random.PRNGKey(0), obs)
    (dense, _), = _kernels(lecun, "Dense")
    assert not _is_orthogonal(dense, np.sqrt(2))
    # The convs are flax's default in both (cleanba leaves them so).
    a = jax.tree.leaves(jax.tree.map(np.asarray, params["params"]["Conv_0"]))
    b = jax.tree.leaves(jax.tree.map(np.asarray, lecun["params"]["Conv_0"]))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_torso_init_is_checked():
    with pytest.raises(ValueError, match="torso init 'xavier'"):
        MLP(layer_init="xavier").init(jax.random.PRNGKey(0), np.ones((1, 3), np.float32))


def test_minatar_cnn_is_the_papers_network():
    """MinAtar examples/dqn.py (4241f24) lines 72-80: Conv2d(C, 16, kernel 3, stride 1) on the
    10x10 grid (8x8x16 = 1024 features), Linear(1024, 128); ReLU after each. 0/1 grids are not
    rescaled (a /255 would make every input ~0), and NCHW input gives the same embedding."""
    rng = np.random.default_rng(0)
    grid = (rng.random((3, 10, 10, 4)) < 0.3).astype(np.float32)
    torso = MinAtarCNN()
    params = torso.init(jax.random.PRNGKey(0), grid)
    shapes = jax.tree.map(np.shape, params["params"])
    assert shapes == {"Conv_0": {"kernel": (3, 3, 4, 16), "bias": (16,)},
                      "Dense_0": {"kernel": (8 * 8 * 16, 128), "bias": (128,)}}
    out = np.asarray(torso.apply(params, grid))
    assert out.shape == (3, 128) and (out >= 0).all()
    # By hand: VALID 3x3 conv + ReLU, flatten (H, W, C order, as flax), dense + ReLU.
    k, b = (np.asarray(params["params"]["Conv_0"][n], np.float64) for n in ("kernel", "bias"))
    conv = np.zeros((3, 8, 8, 16))
    for i in range(8):
        for j in range(8):
            conv[:, i, j] = np.einsum("bhwc,hwcd->bd", grid[:, i:i + 3, j:j + 3], k) + b
    hidden = np.maximum(conv, 0).reshape(3, -1)
    dk, db = (np.asarray(params["params"]["Dense_0"][n], np.float64) for n in ("kernel", "bias"))
    np.testing.assert_allclose(out, np.maximum(hidden @ dk + db, 0), rtol=1e-4, atol=1e-5)
    nchw = MinAtarCNN(channels_first=True).apply(params, np.transpose(grid, (0, 3, 1, 2)))
    np.testing.assert_allclose(np.asarray(nchw), out, rtol=1e-6, atol=1e-6)
    # "reference": orthogonal(sqrt 2), zero bias, on both layers.
    for kernel, bias in _kernels(params, "Conv") + _kernels(params, "Dense"):
        assert _is_orthogonal(kernel, np.sqrt(2)) and not bias.any()
    assert make_torso("minatar_cnn").hidden == 128
