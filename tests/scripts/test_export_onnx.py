"""The ONNX route of scripts/export.py (`--onnx`, jax2onnx) on every kind of network the library
builds: each built-in torso (mlp, nature_cnn, impala_resnet, minatar_cnn, the multi-input `auto`
torso of a dict observation with an image, a vector and a Discrete entry), every action head
(categorical, multi-categorical, clipped and tanh-squashed Gaussians, state-dependent std, Dict
and Tuple mixes, legal-action masks) and the LSTM core with its state in and out. Each model runs
in onnxruntime on random observations beside the same greedy function in JAX: discrete actions
equal, continuous ones within rtol 1e-5 / atol 1e-6, the next core state within the same. A
network with an op the converter cannot lower is refused naming it. The checkpoint-to-folder
parity cases (real env observations, the loader) are in test_export.py.

Skipped, saying why, where the optional extra (requirements-onnx.txt) is not installed; CI
installs it."""
import importlib.util
import types

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

import networks
from agents.acting import ActorParams, init_params
from agents.evaluation import make_greedy_step
from networks import is_recurrent
from networks.config import NetworkConfig, build_network
from scripts import export

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax2onnx") is None
    or importlib.util.find_spec("onnxruntime") is None,
    reason=f"the ONNX extra is not installed: {export.ONNX_EXTRA}")

BATCH = 5
IMAGE = spaces.Box(0, 255, (4, 84, 84), np.uint8)  # EnvPool Atari: channels first
VECTOR = spaces.Box(-np.inf, np.inf, (6,), np.float32)
SENSORS = spaces.Dict({"camera": spaces.Box(0, 255, (32, 32, 3), np.uint8),
                       "lidar": spaces.Box(0.0, 50.0, (16,), np.float32),
                       "speed": spaces.Box(0.0, 40.0, (1,), np.float32),
                       "lane": spaces.Discrete(4)})
DRIVE = spaces.Dict({"steer": spaces.Box(-1.0, 1.0, (1,), np.float32),
                     "throttle": spaces.Box(0.0, 1.0, (1,), np.float32),
                     "gear": spaces.Discrete(3), "signal": spaces.Discrete(3)})
MASKED = spaces.Dict({"obs": VECTOR, "action_mask": spaces.Box(0, 1, (5,), np.int8)})

CASES = {
    "mlp, categorical": (dict(torso="mlp"), VECTOR, spaces.Discrete(4)),
    "nature_cnn on uint8 frames": (dict(torso="nature_cnn"), IMAGE, spaces.Discrete(6)),
    "impala_resnet": (dict(torso="impala_resnet"), IMAGE, spaces.Discrete(6)),
    "minatar_cnn": (dict(torso="minatar_cnn"), spaces.Box(0, 1, (10, 10, 4), np.float32),
                    spaces.Discrete(3)),
    "multi-categorical": (dict(torso="mlp"), VECTOR, spaces.MultiDiscrete([3, 4, 2])),
    "clipped Gaussian": (dict(torso="mlp", shared_torso=False), VECTOR,
                         spaces.Box(-2.0, 2.0, (3,), np.float32)),
    "tanh Gaussian, state-dependent std": (
        dict(torso="mlp", continuous_bounds="tanh", state_dependent_std=True), VECTOR,
        spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, 5.0]), dtype=np.float32)),
    "auto torso on camera, lidar, speed, lane; a Dict action": (dict(), SENSORS, DRIVE),
    "a Tuple action": (dict(torso="mlp"), VECTOR,
                       spaces.Tuple((spaces.Discrete(2), spaces.Box(-1, 1, (2,), np.float32)))),
    "a legal-action mask": (dict(torso="auto"), MASKED, spaces.Discrete(5)),
    "LSTM core, separate value torso": (dict(torso="mlp", lstm_size=8, shared_torso=False),
                                        VECTOR, spaces.Discrete(3)),
    "LSTM core on the sensors, a Dict action": (dict(lstm_size=16), SENSORS, DRIVE),
}


def _observations(space, rng) -> object:
    """A batch [BATCH, ...] of `space`'s observations; a legal-action mask allows one action
    at least per row."""
    if isinstance(space, spaces.Dict):
        obs = {k: _observations(s, rng) for k, s in space.spaces.items()}
        if "action_mask" in obs:
            obs["action_mask"][np.arange(BATCH), rng.integers(0, 5, BATCH)] = 1
        return obs
    if isinstance(space, spaces.Discrete):
        return rng.integers(0, space.n, BATCH).astype(np.int64)
    if space.dtype == np.uint8 or space.dtype == np.int8:
        high = 256 if space.dtype == np.uint8 else 2
        return rng.integers(0, high, (BATCH, *space.shape)).astype(space.dtype)
    return rng.normal(0.0, 3.0, (BATCH, *space.shape)).astype(space.dtype)


def _greedy(fields: dict, obs_space, action_space, obs):
    """(the export's greedy acting function of a freshly initialised network, its parameter
    leaves, the initial core state as a list or None)."""
    mask_key = "action_mask" if "action_mask" in getattr(obs_space, "spaces", {}) else ""
    network = build_network(NetworkConfig(**fields), action_space, obs_space,
                            action_mask_key=mask_key)
    params = init_params(network, jax.random.key(1), obs)
    leaves, treedef = jax.tree.flatten(ActorParams(params, None))
    agent = types.SimpleNamespace(greedy_step=make_greedy_step(network))
    start = None
    core_tree = None
    if is_recurrent(network):
        start, core_tree = jax.tree.flatten(network.initial_state(BATCH))
    return export.acting_function(agent, treedef, core_tree, greedy=True), leaves, start


def _run(model, spec, obs, state):
    import onnxruntime
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    leaves = [obs[e["path"][0]] if e["path"] else obs for e in spec["inputs"] if "path" in e]
    feed = {e["name"]: np.asarray(x, e["dtype"])
            for e, x in zip(spec["inputs"], [*leaves, *(state or [])])}
    return session.run([o["name"] for o in spec["outputs"]], feed)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_network_kind_acts_in_onnxruntime_as_in_jax(case):
    fields, obs_space, action_space = CASES[case]
    obs = _observations(obs_space, np.random.default_rng(0))
    act, leaves, start = _greedy(fields, obs_space, action_space, obs)
    model, spec = export.onnx_model_of(act, leaves, obs, start)
    got = _run(model, spec, obs, start)
    if start is None:
        want, state = act(leaves, obs), []
    else:
        # A state that is not the zeros of an episode's start: the step after this one.
        _, start = act(leaves, obs, start)
        got = _run(model, spec, obs, start)
        want, state = act(leaves, obs, start)
    want_action = jax.tree.leaves(want)
    assert len(got) == len(want_action) + len(state)
    assert [o["path"] for o in spec["outputs"] if "path" in o] == [
        [getattr(k, "key", getattr(k, "idx", None)) for k in path]
        for path, _ in jax.tree_util.tree_flatten_with_path(want)[0]]
    for value, ref in zip(got, [*want_action, *state]):
        ref = np.asarray(ref)
        assert value.shape == ref.shape and value.dtype == ref.dtype, (value, ref)
        if np.issubdtype(ref.dtype, np.integer):
            np.testing.assert_array_equal(value, ref)
        else:
            np.testing.assert_allclose(value, ref, rtol=1e-5, atol=1e-6)
    if "mask" in case:
        legal = obs["action_mask"][np.arange(BATCH), got[0]]
        assert np.all(legal == 1)


class _Whitened(nn.Module):
    """A torso with an op jax2onnx 0.17.1 does not lower for a batch (eigh of [B, H, H])."""

    @nn.compact
    def __call__(self, x):
        h = nn.Dense(4)(x.astype(jnp.float32))
        return jnp.linalg.eigh(h[:, :, None] * h[:, None, :] + jnp.eye(4))[0]


def test_a_network_the_converter_cannot_lower_is_refused_naming_the_op():
    networks.register_torso("onnx_test_eigh", _Whitened)
    try:
        obs = _observations(VECTOR, np.random.default_rng(0))
        act, leaves, start = _greedy(dict(torso="onnx_test_eigh"), VECTOR,
                                     spaces.Discrete(3), obs)
        with pytest.raises(ValueError, match=r"--onnx: jax2onnx .* cannot convert this "
                           r"policy: .*eigh"):
            export.onnx_model_of(act, leaves, obs, start)
    finally:
        networks.TORSOS.unregister("onnx_test_eigh")
