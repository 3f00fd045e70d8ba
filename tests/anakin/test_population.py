"""N seeds and N settings in one compiled program (anakin/population.py,
experiments/wiring/members.py): each member learns what a single run of its seed and settings
learns; fields that change a shape or a Python branch are refused naming them; each member is
its own run for the plotting tools; a population checkpoints and resumes whole; signals end it
as they end one run."""
import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

import agents.ppo as ppo
from anakin import envs, population, runtime
from experiments import train
from experiments.configs import ppo_gymnax
from podracer import checkpoint
from podracer.validation import ConfigError
from tests.helpers import ROOT, quiet_config, read_metrics, small_network

T, B, DEVICES = 16, 8, (0, 1)
CFG = ppo.PPOConfig(learning_rate=1e-3, clip_eps=0.2, reward_clip=0.0, num_minibatches=2,
                    num_epochs=2, correction="none")


def _env():
    return envs.make_env("gymnax:CartPole-v1", {"max_steps_in_episode": 40})


def _single(env, net, seed: int, lr: float, updates: int):
    """A single run's learner state after `updates` updates (anakin/runtime.py, as loop.py)."""
    import dataclasses
    agent = ppo.make_agent(net, dataclasses.replace(CFG, learning_rate=lr), 10)
    mesh = runtime.make_mesh(DEVICES)
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    state = runtime.place_replicated(agent.init(jax.random.key(seed), example), mesh)
    runner = runtime.place_runner(
        runtime.init_runner(agent, env, runtime.runner_key(seed, 0), B), mesh)
    update = runtime.make_update_fn(agent, env, mesh, T)
    for _ in range(updates):
        state, runner, _, _ = update(state, runner)
    return jax.device_get(state)


def test_each_member_learns_what_a_single_run_of_its_seed_and_setting_learns():
    env = _env()
    net = small_network(env.action_space, hidden_sizes=(16,))
    lrs, seeds = (1e-3, 3e-3), (0, 1)
    import copy

    def make_agent(hp):
        cfg = copy.copy(CFG)
        object.__setattr__(cfg, "learning_rate", hp["learning_rate"])
        return ppo.make_agent(net, cfg, 10)

    pop = population.Population(make_agent, tuple(s for _ in lrs for s in seeds),
                                {"learning_rate": np.asarray([lr for lr in lrs for _ in seeds])})
    mesh = runtime.make_mesh(DEVICES)
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    states, runners = population.place(*population.init(pop, env, example, 0, B), mesh)
    update = population.make_update_fn(pop, env, mesh, T)
    for _ in range(3):
        states, runners, metrics, _ = update(pop.stacked_hparams(), states, runners)
    states = jax.device_get(states)
    assert np.asarray(metrics["loss/total"]).shape == (4,)
    for m, (lr, seed) in enumerate((lr, s) for lr in lrs for s in seeds):
        alone = _single(env, net, seed, lr, 3)
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                     population.member_state(states, m).params, alone.params)
    # ...and they did not all learn the same thing.
    p = [population.member_state(states, m).params for m in range(4)]
    assert not np.allclose(jax.tree.leaves(p[0])[0], jax.tree.leaves(p[1])[0])
    assert not np.allclose(jax.tree.leaves(p[0])[0], jax.tree.leaves(p[2])[0])


def _config(tmp_path, **overrides):
    return quiet_config(ppo_gymnax.get_config(), tmp_path / "run", num_envs=B,
                        unroll_length=T, **{"agent.num_minibatches": 2,
                                            "checkpoint_every_minutes": 0.0, **overrides})


@pytest.mark.parametrize("vary,match", [
    ("agent.num_minibatches=[2, 4]", r"agent\.num_minibatches cannot vary within one program: "
                                     r"the agent uses it as a shape or in a Python branch"),
    ("agent.max_grad_norm=[0.5, 0.0]", r"agent\.max_grad_norm cannot vary within one program"),
    ("network.lstm_size=[0, 8]", r"'network\.lstm_size' cannot vary within one program: only "
                                 r"agent fields can"),
    ("num_envs=[8, 16]", r"'num_envs' cannot vary within one program"),
    ("agent.learning_rate=[1e-3, -1.0]", r"vary: agent\.learning_rate=-1\.0 must be positive"),
    ("agent.learnin_rate=[1e-3]", r"vary: agent\.learnin_rate is not a field of PPOConfig"),
    ("agent.learning_rate=1e-3", r"is not FIELD=\[value, \.\.\.\]"),
])
def test_fields_that_cannot_vary_are_refused_naming_them(tmp_path, vary, match):
    with pytest.raises(ConfigError, match=match):
        train.run(_config(tmp_path, total_env_steps=T * B, vary=vary))
    assert not (tmp_path / "run" / "members").exists()  # refused before anything was written


def test_sebulba_refuses_a_population(tmp_path):
    config = _config(tmp_path, num_seeds=2, runtime="sebulba", total_env_steps=T * B)
    config.env.name = "CartPole-v1"
    with pytest.raises(ConfigError, match=r"num_seeds=2.*need runtime='anakin'"):
        train.run(config)


def test_members_are_runs_for_the_tools_and_the_population_resumes_whole(tmp_path):
    vary = "agent.learning_rate=[0.001, 0.003]"
    first = train.run(_config(tmp_path, total_env_steps=T * B * 2, num_seeds=2, vary=vary,
                              checkpoint_every_updates=1))
    assert (first.updates, first.env_steps, len(first.members)) == (2, 2 * T * B, 4)
    run = tmp_path / "run"
    names = sorted(os.listdir(run / "members"))
    assert names == ["00-s0-learning_rate=0.001", "01-s1-learning_rate=0.001",
                     "02-s0-learning_rate=0.003", "03-s1-learning_rate=0.003"]
    for name in names:
        cfg = json.loads((run / "members" / name / "config.json").read_text())
        assert (cfg["seed"], cfg["num_seeds"], cfg["vary"]) == (int(name[4]), 1, "")
        assert cfg["agent"]["learning_rate"] == float(name.split("=")[1])
        assert [r["updates"] for r in read_metrics(run / "members" / name)] == [1, 2]
    summary = json.loads((run / "summary.json").read_text())
    assert [m["member"] for m in summary["members"]] == names
    # scripts/plot.py groups the members by setting, the seeds as the spread.
    sys.path.insert(0, str(ROOT))
    from scripts import _runs
    labels = _runs.labels([str(run / "members" / n) for n in names])
    assert len(set(labels.values())) == 2
    assert _runs.load_curve(str(run / "members" / names[0]), "episode/return_mean") is not None
    # One checkpoint of the whole population; --config.resume continues every member.
    assert checkpoint.list_steps(str(run / "checkpoints")) == [1, 2]
    resumed = train.run(_config(tmp_path, total_env_steps=T * B * 4, num_seeds=2, vary=vary,
                                resume=str(run)))
    assert (resumed.updates, resumed.env_steps) == (4, 4 * T * B)
    for name in names:
        rows = read_metrics(run / "members" / name)
        assert [r["step"] for r in rows] == [T * B * u for u in (1, 2, 3, 4)]


_CHILD = """
import sys
from experiments import train
from experiments.configs import ppo_gymnax
from tests.helpers import quiet_config
config = quiet_config(ppo_gymnax.get_config(), sys.argv[1], num_envs=8, unroll_length=16,
                      num_seeds=3, total_env_steps=10_000_000, checkpoint_every_minutes=0.0,
                      **{"agent.num_minibatches": 2})
train.run(config)
"""


@pytest.mark.slow  # a population run in a subprocess, signalled once it has logged updates
@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_signals_end_a_population_as_one_run(tmp_path, sig, status):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(run)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        jsonl = run / "members" / "00-s0" / "metrics.jsonl"
        deadline = time.time() + 240
        while time.time() < deadline and not (jsonl.exists() and len(jsonl.read_text()
                                                                      .splitlines()) >= 2):
            time.sleep(0.5)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == status, out
    assert "Traceback" not in out, out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stopped_by"] == sig.name and len(summary["members"]) == 3
    steps = checkpoint.list_steps(str(run / "checkpoints"))
    assert steps == [summary["updates"]], (steps, summary)
    for m in ("00-s0", "01-s1", "02-s2"):
        member = json.loads((run / "members" / m / "summary.json").read_text())
        assert member["updates"] == summary["updates"] and member["seed"] == int(m[-1])
