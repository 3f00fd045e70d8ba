"""scripts/evaluate.py acts as the actors do (any action head, normalised observations, an
agent's own network); the scripts load environments that a user module registers
(`--import`); user errors print one line and exit 2."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import normalization
from experiments.configs import ppo_mujoco
from scripts import evaluate
from sebulba import registry
from experiments.wiring import user_modules
from tests.fakes import wide_head
from tests.helpers import (build_agent, quiet_config, save_state,
                           write_user_env_module)


def _save(config, state, directory) -> None:
    save_state(directory, state, "ppo", json.loads(config.to_json()))


def test_greedy_gaussian_policy_uses_the_mean_and_the_observation_statistics(tmp_path):
    # obs_norm on, clipped Gaussian in [-2, 2]
    config = quiet_config(ppo_mujoco.get_config("pendulum"), tmp_path / "run")
    assert config.agent.obs_norm
    network, agent, obs = build_agent(config, num_envs=2)
    state = agent.init(jax.random.key(1), obs)
    # Statistics far from the initial (0, 1): a policy that ignored them would act differently.
    stats = normalization.RunningStats(jnp.asarray(50.0), jnp.full(3, 0.7), jnp.full(3, 9.0))
    state = state._replace(norm=state.norm._replace(obs=stats))
    _save(config, state, tmp_path / "run" / "checkpoints")

    greedy = evaluate.load_policy(config.run_dir, greedy=True)
    got = np.asarray(greedy.new_actor(2).act(obs, jax.random.key(0)))
    pi, _ = network.apply(state.params, np.clip((obs - 0.7) / np.sqrt(9.0 + 1e-8), -10, 10))
    mean = np.asarray(pi["mean"]).reshape(got.shape)
    np.testing.assert_allclose(got, np.clip(mean, -2.0, 2.0), rtol=1e-5, atol=1e-6)
    raw_pi, _ = network.apply(state.params, obs)
    assert not np.allclose(got, np.asarray(network.dist.mode(raw_pi)), atol=1e-4)

    sampled = evaluate.load_policy(config.run_dir, greedy=False)
    a1, a2 = (np.asarray(sampled.new_actor(2).act(obs, jax.random.key(k))) for k in (1, 2))
    assert a1.shape == got.shape and not np.allclose(a1, a2)
    assert np.all(np.abs(a1) <= 2.0)

    report = evaluate.main([config.run_dir, "--episodes", "2", "--num_envs", "2"])
    assert report["episodes"] == 2 and report["length_mean"] == 200  # Pendulum's time limit


def test_import_flag_loads_a_user_registered_env(impala_classic_config, tmp_path, capsys):
    module = tmp_path / "user_envs.py"
    write_user_env_module(module, "UserCartPole-test-v0")
    user_modules.import_modules([str(module)])
    try:
        config = impala_classic_config(**{"env.name": "UserCartPole-test-v0"})
        network, agent, obs = build_agent(config, num_envs=2)
        _save(config, agent.init(jax.random.key(0), obs), tmp_path / "run" / "checkpoints")
    finally:
        registry.unregister_env("UserCartPole-test-v0")
    with pytest.raises(ValueError, match="UserCartPole-test-v0"):
        evaluate.load_policy(config.run_dir)  # not registered in this process
    with pytest.raises(SystemExit) as e:  # the command: one line, exit 2
        evaluate.main([config.run_dir, "--episodes", "1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "UserCartPole-test-v0" in err and "Traceback" not in err
    report = evaluate.main([config.run_dir, "--episodes", "3", "--num_envs", "3",
                            "--import", str(module)])
    registry.unregister_env("UserCartPole-test-v0")
    assert report["env"] == "UserCartPole-test-v0" and report["episodes"] == 3


def test_an_agent_with_its_own_head_plays_greedily_or_is_refused_in_one_line(
        impala_classic_config, tmp_path, capsys):
    """docs/howto_network.md's different head: greedy play is the agent's own greedy_step;
    an agent without one is refused before any game (the config's network does not fit it),
    in one line naming the way out, and samples instead."""
    runs = {}
    for name in (wide_head.AGENT, wide_head.AGENT_NO_GREEDY):
        config = impala_classic_config(under=name, agent_name=name)
        _, agent, obs = build_agent(config)
        save_state(tmp_path / name / "run" / "checkpoints", agent.init(jax.random.key(0), obs),
                   name, json.loads(config.to_json()))
        runs[name] = config.run_dir
    report = evaluate.main([runs[wide_head.AGENT], "--episodes", "2", "--num_envs", "2"])
    assert report["policy"] == "greedy" and report["episodes"] == 2

    with pytest.raises(SystemExit) as e:
        evaluate.main([runs[wide_head.AGENT_NO_GREEDY], "--episodes", "2"])
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: greedy evaluation plays the network config.network")
    assert "--policy sample" in err[0] and len(err) == 2  # the message, then the --verbose hint
    with pytest.raises(evaluate.players.EvalPolicyError):  # --verbose: the exception itself
        evaluate.main([runs[wide_head.AGENT_NO_GREEDY], "--episodes", "2", "--verbose"])
    from scripts import render  # the same loading, the same one line
    with pytest.raises(SystemExit) as e:
        render.main([runs[wide_head.AGENT_NO_GREEDY], "--output", str(tmp_path / "v.gif")])
    assert e.value.code == 2 and "--policy sample" in capsys.readouterr().err
    report = evaluate.main([runs[wide_head.AGENT_NO_GREEDY], "--episodes", "2", "--num_envs",
                            "2", "--policy", "sample"])
    assert report["policy"] == "sample" and report["episodes"] == 2


def test_import_flag_names_a_module_that_does_not_import():
    with pytest.raises(ValueError, match="--import 'no_such_module_xyz' failed"):
        user_modules.import_modules(["no_such_module_xyz"])


def test_benchmark_takes_a_user_env_with_dict_observations_and_mixed_actions():
    from benchmarks import throughput
    results = throughput.main(["--env", "Driving-v0", "--import", "examples.driving",
                              "--num_envs", "4", "--actor_threads", "1", "--seconds", "1",
                               "--warmup_steps", "8", "--measures", "env_only,env_infer,learner"])
    assert all(results[m] > 0 for m in ("env_only", "env_infer", "learner")), results


def test_benchmark_runs_a_recurrent_agent_and_names_a_bad_override():
    from benchmarks import throughput
    results = throughput.main(["--env", "CartPole-v1", "--algo", "ppo", "--num_envs", "4",
                              "--actor_threads", "1", "--seconds", "1", "--warmup_steps", "8",
                               "--set", "network.lstm_size=8", "--set", "unroll_length=16",
                               "--measures", "env_infer,learner"])
    assert results["env_infer"] > 0 and results["learner"] > 0
    with pytest.raises(ValueError, match="network.lstm=8"):
        throughput.main(["--env", "CartPole-v1", "--set", "network.lstm=8",
                        "--measures", "env_only"])
