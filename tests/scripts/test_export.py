"""scripts/export.py and scripts/policy_loader.py: the exported policy acts as the library's own
player does (scripts/evaluate.py's, the actors' functions) on real observations from the env:
discrete actions equal, continuous ones within float tolerance; for IMPALA and PPO, an MLP, an
Atari Nature CNN on uint8 frames, a clipped Gaussian with observation normalisation, a mixed
Dict action from a registered torso; greedy and sampled (the same key, the same draw); and
the loader runs in a fresh interpreter where this library's packages cannot be imported. The
greedy cases run again through the export's ONNX model (`--onnx`) and the loader's
runtime="onnxruntime", with the same tolerances, in an interpreter without jax too (skipped,
saying why, where the optional extra requirements-onnx.txt is not installed; CI installs it)."""
import importlib.util
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import normalization
from experiments.configs import impala_atari, ppo_mujoco
from scripts import evaluate, export, policy_loader
from tests.helpers import ROOT, build_agent, quiet_config, save_state


def _saved_run(config, num_envs: int, transform=None):
    """Saves `config`'s freshly initialised agent (its state through `transform`) as the run
    dir's checkpoint; returns the env's first observations of `num_envs` envs."""
    _, agent, obs = build_agent(config, num_envs=num_envs)
    state = agent.init(jax.random.key(3), obs)
    if transform is not None:
        state = transform(state)
    save_state(os.path.join(config.run_dir, "checkpoints"), state, config.agent_name,
               json.loads(config.to_json()))
    return obs


def _library_actions(config, obs, greedy=True, key=None):
    policy = evaluate.load_policy(config.run_dir, greedy=greedy)
    return policy.new_actor(len(jax.tree.leaves(obs)[0])).act(
        obs, key if key is not None else jax.random.key(0))


ONNX_MISSING = (importlib.util.find_spec("jax2onnx") is None
                or importlib.util.find_spec("onnxruntime") is None)
# The loader's runtimes: each greedy parity case runs on both.
RUNTIMES = ["jax", pytest.param("onnxruntime", marks=pytest.mark.skipif(
    ONNX_MISSING, reason=f"the ONNX extra is not installed: {export.ONNX_EXTRA}"))]


def _export(config, folder, runtime: str = "jax", **kwargs):
    """(the export's folder, its policy through the loader's `runtime`)."""
    out = export.export(config.run_dir, str(folder), onnx=runtime == "onnxruntime", **kwargs)
    return out, policy_loader.load(out, runtime=runtime)


def _check(config, obs, tmp_path, exact: bool, runtime: str = "jax"):
    out, policy = _export(config, tmp_path / "exported", runtime)
    action, state = policy(obs)
    assert state is None
    want = _library_actions(config, obs)
    for got, ref in zip(jax.tree.leaves(action), jax.tree.leaves(want)):
        assert got.shape == np.shape(ref) and got.dtype == np.asarray(ref).dtype
        if exact:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    return out


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_atari_nature_cnn_acts_as_in_the_library(tmp_path, runtime):
    config = quiet_config(impala_atari.get_config("cpu"), tmp_path / "run")
    obs = _saved_run(config, num_envs=4)
    assert obs.dtype == np.uint8 and obs.shape[1:] == (4, 84, 84)
    out = _check(config, obs, tmp_path, exact=True, runtime=runtime)
    spec = json.loads(open(os.path.join(out, "policy.json")).read())
    assert spec["inputs"]["observation"] == {"shape": [None, 4, 84, 84], "dtype": "uint8"}
    assert spec["action_space"]["type"] == "Discrete" and spec["update"] == 0
    assert spec["config"]["agent_name"] == "impala" and spec["policy"] == "greedy"
    onnx = {"policy.onnx"} if runtime == "onnxruntime" else set()
    assert set(os.listdir(out)) == {"policy.stablehlo", "params.npz", "policy.json",
                                    "load_policy.py", *onnx}
    # Any batch size: one observation.
    single, _ = policy_loader.load(out, runtime=runtime)(obs[:1])
    assert single.shape == (1,)


def _pendulum(tmp_path):
    """PPO on Pendulum (a clipped Gaussian in [-2, 2]) with observation statistics far from
    the initial ones, so a policy that dropped them would act otherwise."""
    config = quiet_config(ppo_mujoco.get_config("pendulum"), tmp_path / "run")
    assert config.agent.obs_norm
    stats = normalization.RunningStats(jnp.asarray(50.0), jnp.full(3, 0.7), jnp.full(3, 9.0))
    obs = _saved_run(config, 8, lambda s: s._replace(norm=s.norm._replace(obs=stats)))
    return config, obs


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_clipped_gaussian_with_normalised_observations_acts_as_in_the_library(
        tmp_path, runtime):
    config, obs = _pendulum(tmp_path)
    _check(config, obs, tmp_path, exact=False, runtime=runtime)


def test_a_sampling_export_draws_what_the_library_draws_with_the_same_key(tmp_path):
    config, obs = _pendulum(tmp_path)
    out = export.export(config.run_dir, str(tmp_path / "sampled"), greedy=False)
    policy = policy_loader.load(out)
    key = jax.random.key(7)
    got, _ = policy(obs, key=np.asarray(jax.random.key_data(key)))
    want = _library_actions(config, obs, greedy=False, key=key)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    again, _ = policy(obs, key=7)  # an int seed is jax.random.key(seed)
    np.testing.assert_array_equal(again, got)
    other, _ = policy(obs, key=8)
    assert not np.allclose(other, got)
    with pytest.raises(ValueError, match="pass key="):
        policy(obs)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_mixed_dict_action_from_a_registered_torso_acts_as_in_the_library(
        tmp_path, runtime):
    import examples.driving  # noqa: F401  (registers Driving-v0 and its torso)
    from examples.driving import config as driving
    config = quiet_config(driving.get_config("ppo"), tmp_path / "run")
    obs = _saved_run(config, 4)
    out = _check(config, obs, tmp_path, exact=False, runtime=runtime)
    spec = json.loads(open(os.path.join(out, "policy.json")).read())
    assert spec["action_space"]["type"] == "Dict" and isinstance(obs, dict)
    assert set(spec["inputs"]["observation"]) == set(obs)


_NO_LIBRARY = """
import importlib.abc, json, sys
BLOCKED = {"agents", "anakin", "benchmarks", "examples", "experiments", "networks",
           "podracer", "scripts", "sebulba", "tests", "flax", "optax", "distrax", "chex",
           "rlax", "envpool", "gymnasium", "ml_collections", "orbax", *sys.argv[6:]}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the loader must not need it")
sys.meta_path.insert(0, Block())
sys.path = [p for p in sys.path if p not in ("", ".", sys.argv[1])]
import importlib.util, numpy as np
spec = importlib.util.spec_from_file_location("load_policy", sys.argv[2] + "/load_policy.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
obs = dict(np.load(sys.argv[3]))
policy = module.load(sys.argv[2], runtime=sys.argv[5])
action, _ = policy(obs["obs"])
np.save(sys.argv[4], action)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)))
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_loader_needs_neither_this_library_nor_its_training_packages(tmp_path, runtime):
    """...nor, through onnxruntime, jax."""
    config, obs = _pendulum(tmp_path)
    out, _ = _export(config, tmp_path / "exported", runtime)
    np.savez(tmp_path / "obs.npz", obs=obs)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    blocked = ["jax", "jaxlib"] if runtime == "onnxruntime" else []
    proc = subprocess.run(
        [sys.executable, "-c", _NO_LIBRARY, str(ROOT), out, str(tmp_path / "obs.npz"),
         str(tmp_path / "action.npy"), runtime, *blocked], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    np.testing.assert_allclose(np.load(tmp_path / "action.npy"),
                               _library_actions(config, obs), rtol=1e-5, atol=1e-6)


def test_the_command_line_names_the_default_folder_and_refuses_a_missing_run(
        tmp_path, capsys):
    config, _ = _pendulum(tmp_path)
    out = export.main([config.run_dir, "--platforms", "cpu"])
    assert out == os.path.join(config.run_dir, "export", "update0-greedy")
    assert json.loads(open(os.path.join(out, "policy.json")).read())["platforms"] == ["cpu"]
    with pytest.raises(SystemExit) as e:
        export.main([str(tmp_path / "nothing")])
    assert e.value.code == 2
    assert "no checkpoint at" in capsys.readouterr().err
    # The ONNX model is the greedy policy: a sampling one is refused before any work.
    with pytest.raises(SystemExit) as e:
        export.main([config.run_dir, "--sample", "--onnx"])
    assert e.value.code == 2
    assert "--onnx exports the greedy policy only" in capsys.readouterr().err
    # A folder without an ONNX model, asked for onnxruntime: what to do instead.
    with pytest.raises(ValueError, match="has no ONNX model: export it with --onnx"):
        policy_loader.load(out, runtime="onnxruntime")
    with pytest.raises(ValueError, match=r"runtime='tf': expected one of \('jax', "):
        policy_loader.load(out, runtime="tf")


def test_onnx_without_its_extra_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    config, _ = _pendulum(tmp_path)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jax2onnx" else real(name, *a))
    with pytest.raises(SystemExit) as e:
        export.main([config.run_dir, "--onnx"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--onnx needs jax2onnx, not installed: pip install --no-deps -r " \
        "requirements-onnx.txt" in err


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_lstm_policy_carries_its_state_as_the_library_does_over_whole_episodes(
        impala_classic_config, tmp_path, runtime):
    """IMPALA with an LSTM core on CartPole, 4 envs for 150 steps through episode ends: the
    exported policy, its state carried by the caller and reset on each new episode's first
    observation, plays the library player's actions step for step (that player resets its
    core as the training actors do: agents/evaluation.py)."""
    import envpool
    config = impala_classic_config(**{"network.lstm_size": 8})
    _saved_run(config, 4)
    out, policy = _export(config, tmp_path / "exported", runtime)
    spec = json.loads(open(os.path.join(out, "policy.json")).read())
    # (c, h) of the policy's LSTM and of the value's (impala_classic: shared_torso False).
    assert spec["recurrent"] and len(spec["inputs"]["state"]) == 4
    library = evaluate.load_policy(config.run_dir).new_actor(4)
    env = envpool.make_gymnasium("CartPole-v1", num_envs=4, seed=5)
    obs, _ = env.reset()
    state = policy.initial_state(4)
    assert [s.shape for s in state] == [(4, 8)] * 4 and not np.any(state[0])
    after_end = np.zeros(4, bool)  # EnvPool: the step after a game's end is a reset step
    starts, ends = np.zeros(4, bool), 0
    for _ in range(150):
        state = policy.reset(state, starts)
        action, state = policy(obs, state)
        np.testing.assert_array_equal(action, library.act(obs, jax.random.key(0)))
        obs, _, terminated, truncated, _ = env.step(action)
        library.observe(terminated, truncated)
        done = terminated | truncated
        starts, after_end = after_end, done
        ends += int(done.sum())
    assert ends >= 4  # the state went through episode ends


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_member_of_an_anakin_population_exports_with_its_own_parameters(tmp_path, runtime):
    """An Anakin run (gymnax CartPole) of 2 seeds: `--member I` (or the member's run dir)
    exports member I, acting as the library's player of that member does, and the two
    members' exports differ."""
    from experiments import train
    from experiments.configs import ppo_gymnax
    config = quiet_config(ppo_gymnax.get_config(), tmp_path / "pop", num_seeds=2, num_envs=8,
                          unroll_length=8, total_env_steps=64,
                          **{"agent.num_minibatches": 2})
    train.run(config)
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    for member, name in enumerate(sorted(os.listdir(tmp_path / "pop" / "members"))):
        onnx = runtime == "onnxruntime"
        by_flag = export.export(config.run_dir, str(tmp_path / f"m{member}"), member=member,
                                onnx=onnx)
        by_dir = export.export(str(tmp_path / "pop" / "members" / name),
                               str(tmp_path / f"d{member}"), onnx=onnx)
        got, _ = policy_loader.load(by_flag, runtime=runtime)(obs)
        np.testing.assert_array_equal(policy_loader.load(by_dir, runtime=runtime)(obs)[0], got)
        want = evaluate.load_policy(config.run_dir, member=member).new_actor(16).act(
            obs, jax.random.key(0))
        np.testing.assert_array_equal(got, want)
        spec = json.loads(open(os.path.join(by_flag, "policy.json")).read())
        assert spec["member"] == {"index": member, "name": name}
        assert spec["config"]["seed"] == member and spec["config"]["num_seeds"] == 1
    params = [np.load(tmp_path / f"m{m}" / "params.npz") for m in (0, 1)]
    assert any(not np.array_equal(params[0][k], params[1][k]) for k in params[0].files)
