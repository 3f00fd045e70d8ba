"""scripts/export.py and scripts/policy_loader.py: the exported policy acts as the library's own
player does (scripts/evaluate.py's, the actors' functions) on real observations from the env:
discrete actions equal, continuous ones within float tolerance; for IMPALA and PPO, an MLP, an
Atari Nature CNN on uint8 frames, a clipped Gaussian with observation normalisation, a mixed
Dict action from a registered torso; greedy and sampled (the same key, the same draw); and the
loader runs in a fresh interpreter where this library's packages cannot be imported."""
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


def _check(config, obs, tmp_path, exact: bool):
    out = export.export(config.run_dir, str(tmp_path / "exported"))
    action, state = policy_loader.load(out)(obs)
    assert state is None
    want = _library_actions(config, obs)
    for got, ref in zip(jax.tree.leaves(action), jax.tree.leaves(want)):
        assert got.shape == np.shape(ref) and got.dtype == np.asarray(ref).dtype
        if exact:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    return out


def test_an_atari_nature_cnn_acts_as_in_the_library(tmp_path):
    config = quiet_config(impala_atari.get_config("cpu"), tmp_path / "run")
    obs = _saved_run(config, num_envs=4)
    assert obs.dtype == np.uint8 and obs.shape[1:] == (4, 84, 84)
    out = _check(config, obs, tmp_path, exact=True)
    spec = json.loads(open(os.path.join(out, "policy.json")).read())
    assert spec["inputs"]["observation"] == {"shape": [None, 4, 84, 84], "dtype": "uint8"}
    assert spec["action_space"]["type"] == "Discrete" and spec["update"] == 0
    assert spec["config"]["agent_name"] == "impala" and spec["policy"] == "greedy"
    assert set(os.listdir(out)) == {"policy.stablehlo", "params.npz", "policy.json",
                                    "load_policy.py"}
    # Any batch size: one observation.
    single, _ = policy_loader.load(out)(obs[:1])
    assert single.shape == (1,)


def _pendulum(tmp_path):
    """PPO on Pendulum (a clipped Gaussian in [-2, 2]) with observation statistics far from
    the initial ones, so a policy that dropped them would act otherwise."""
    config = quiet_config(ppo_mujoco.get_config("pendulum"), tmp_path / "run")
    assert config.agent.obs_norm
    stats = normalization.RunningStats(jnp.asarray(50.0), jnp.full(3, 0.7), jnp.full(3, 9.0))
    obs = _saved_run(config, 8, lambda s: s._replace(norm=s.norm._replace(obs=stats)))
    return config, obs


def test_a_clipped_gaussian_with_normalised_observations_acts_as_in_the_library(tmp_path):
    config, obs = _pendulum(tmp_path)
    _check(config, obs, tmp_path, exact=False)


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


def test_a_mixed_dict_action_from_a_registered_torso_acts_as_in_the_library(tmp_path):
    import examples.driving  # noqa: F401  (registers Driving-v0 and its torso)
    from examples.driving import config as driving
    config = quiet_config(driving.get_config("ppo"), tmp_path / "run")
    obs = _saved_run(config, 4)
    out = _check(config, obs, tmp_path, exact=False)
    spec = json.loads(open(os.path.join(out, "policy.json")).read())
    assert spec["action_space"]["type"] == "Dict" and isinstance(obs, dict)
    assert set(spec["inputs"]["observation"]) == set(obs)


_NO_LIBRARY = """
import importlib.abc, json, sys
BLOCKED = {"agents", "anakin", "benchmarks", "examples", "experiments", "networks",
           "podracer", "scripts", "sebulba", "tests", "flax", "optax", "distrax", "chex",
           "rlax", "envpool", "gymnasium", "ml_collections", "orbax"}
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
policy = module.load(sys.argv[2])
action, _ = policy(obs["obs"])
np.save(sys.argv[4], action)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)))
"""


def test_the_loader_needs_neither_this_library_nor_its_training_packages(tmp_path):
    config, obs = _pendulum(tmp_path)
    out = export.export(config.run_dir, str(tmp_path / "exported"))
    np.savez(tmp_path / "obs.npz", obs=obs)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", _NO_LIBRARY, str(ROOT), out, str(tmp_path / "obs.npz"),
         str(tmp_path / "action.npy")], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=300)
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


def test_an_lstm_policy_carries_its_state_as_the_library_does_over_whole_episodes(
        impala_classic_config, tmp_path):
    """IMPALA with an LSTM core on CartPole, 4 envs for 150 steps through episode ends: the
    exported policy, its state carried by the caller and reset on each new episode's first
    observation, plays the library player's actions step for step (that player resets its
    core as the training actors do: agents/evaluation.py)."""
    import envpool
    config = impala_classic_config(**{"network.lstm_size": 8})
    _saved_run(config, 4)
    out = export.export(config.run_dir, str(tmp_path / "exported"))
    spec = json.loads(open(os.path.join(out, "policy.json")).read())
    # (c, h) of the policy's LSTM and of the value's (impala_classic: shared_torso False).
    assert spec["recurrent"] and len(spec["inputs"]["state"]) == 4
    policy = policy_loader.load(out)
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


def test_a_member_of_an_anakin_population_exports_with_its_own_parameters(tmp_path):
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
        by_flag = export.export(config.run_dir, str(tmp_path / f"m{member}"), member=member)
        by_dir = export.export(str(tmp_path / "pop" / "members" / name),
                               str(tmp_path / f"d{member}"))
        got, _ = policy_loader.load(by_flag)(obs)
        np.testing.assert_array_equal(policy_loader.load(by_dir)(obs)[0], got)
        want = evaluate.load_policy(config.run_dir, member=member).new_actor(16).act(
            obs, jax.random.key(0))
        np.testing.assert_array_equal(got, want)
        spec = json.loads(open(os.path.join(by_flag, "policy.json")).read())
        assert spec["member"] == {"index": member, "name": name}
        assert spec["config"]["seed"] == member and spec["config"]["num_seeds"] == 1
    params = [np.load(tmp_path / f"m{m}" / "params.npz") for m in (0, 1)]
    assert any(not np.array_equal(params[0][k], params[1][k]) for k in params[0].files)
