"""N seeds and N settings in one compiled program (anakin/population.py,
experiments/wiring/members.py, drivers/anakin_population.py): each member learns what a single
run of its seed and settings learns; fields that change a shape or a Python branch are refused
naming them; each member is its own run for the plotting tools; a population checkpoints and
resumes whole, and refuses a resume with other members. A member that diverges: test_population_divergence.py."""
import dataclasses
import functools
import json
import os
import shutil

import jax
import matplotlib.image
import numpy as np
import pytest

import agents.ppo as ppo
from anakin import actor, envs, key_streams, population, topology, update_program
from experiments import train
from podracer import checkpoint
from podracer.validation import ConfigError
from scripts import plot, sweep
from scripts.analysis import rundir
from tests.helpers import (POPULATION_B, POPULATION_T, key_data, population_config,
                           read_metrics, small_network)

T, B = POPULATION_T, POPULATION_B
CFG = ppo.PPOConfig(learning_rate=1e-3, clip_eps=0.2, reward_clip=0.0, num_minibatches=2,
                    num_epochs=2, correction="none")


def _env():
    return envs.make_env("gymnax:CartPole-v1", {"max_steps_in_episode": 40})


@functools.lru_cache(maxsize=None)
def _single_program(devices: tuple[int, ...], lr: float, axis: str):
    """A single run's agent, mesh and compiled update (anakin/update_program.py, as loop.py builds
    them) on `devices` with learning rate `lr` and minibatches over `axis`: compiled once, run
    for each seed."""
    env = _env()
    agent = ppo.make_agent(_net(env), dataclasses.replace(CFG, learning_rate=lr,
                                                          minibatch_axis=axis), 10)
    mesh = topology.make_mesh(devices)
    return env, agent, mesh, update_program.make_update_fn(agent, env, mesh, T)


@functools.lru_cache(maxsize=None)
def _single(devices: tuple[int, ...], seed: int, lr: float, updates: int, axis: str):
    """A single run's learner state and env runner (on the host) after `updates` updates, one
    per call."""
    env, agent, mesh, update = _single_program(devices, lr, axis)
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    state = topology.place_replicated(agent.init(jax.random.key(seed), example), mesh)
    runner = topology.place_runner(
        actor.init_runner(agent, env, key_streams.runner_key(seed, 0), B), mesh)
    for _ in range(updates):
        state, runner, _, _ = update(state, runner)
    return jax.device_get((state, runner))


def _close(a, b):
    """Floats within the tolerance of a batched program (XLA may fuse it differently); the
    rest (counters, flags, key data) equal."""
    if np.issubdtype(np.asarray(a).dtype, np.floating):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
    else:
        np.testing.assert_array_equal(a, b)


def _net(env):
    return small_network(env.action_space, hidden_sizes=(16,))


# (devices, updates_per_call K, the call lengths of the population's 3 updates). K > 1 is the
# fused program every run uses by default (K = 16: update_program.fused_rounds, a call of n <= K
# updates), here with calls of 2 then 1 update; the single runs it is compared with run one
# update per call (K = 1) on the same devices.
@pytest.mark.parametrize("devices,updates_per_call,calls,axis", [
    pytest.param((0, 1), 1, (1, 1, 1), "env", id="2-devices"),
    pytest.param((0, 1), 3, (2, 1), "env", id="2-devices-fused"),
    # One device (a user's one machine), fused: its collectives are skipped (a one-device axis).
    pytest.param((0,), 3, (2, 1), "env", id="1-device-fused"),
    # Minibatches of shuffled single steps (the MinAtar and purejaxrl settings): the loss runs
    # on flat steps, with the members' axis vmapped in front.
    pytest.param((0,), 3, (2, 1), "sample", id="1-device-fused-sample"),
])
def test_each_member_learns_what_a_single_run_of_its_seed_and_setting_learns(
        devices, updates_per_call, calls, axis):
    env = _env()
    net = _net(env)
    lrs, seeds = (1e-3, 3e-3), (0, 1)

    def make_agent(hp):
        cfg = dataclasses.replace(CFG, minibatch_axis=axis)
        object.__setattr__(cfg, "learning_rate", hp["learning_rate"])
        return ppo.make_agent(net, cfg, 10)

    pop = population.Population(make_agent, tuple(s for _ in lrs for s in seeds),
                                {"learning_rate": np.asarray([lr for lr in lrs for _ in seeds])})
    mesh = topology.make_mesh(devices)
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    states, runners = population.place(*population.init(pop, env, example, 0, B), mesh)
    update = population.make_update_fn(pop, env, mesh, T, updates_per_call)
    for n in calls:
        if updates_per_call == 1:
            states, runners, metrics, _ = update(pop.stacked_hparams(), states, runners)
        else:
            states, runners, metrics, _ = update(pop.stacked_hparams(), states, runners, n=n)
    states, runners = jax.device_get((states, runners))
    loss = np.asarray(metrics["loss/total"])
    if updates_per_call == 1:
        assert loss.shape == (4,)
    else:  # [K, M]: the last call ran 1 of its K rounds; the rest are zeros
        assert loss.shape == (updates_per_call, 4)
        assert np.all(np.isfinite(loss[0])) and np.all(loss[1:] == 0)
    for m, (lr, seed) in enumerate((lr, s) for lr in lrs for s in seeds):
        alone, alone_runner = _single(devices, seed, lr, sum(calls), axis)
        # The whole learner state (parameters, optimiser moments and count, the shuffle key,
        # the update counter, normaliser statistics) and the env runner (env states, key
        # streams, episode counters), not the parameters alone.
        for mine, single in ((population.member_state(states, m), alone),
                             (population.member_state(runners, m), alone_runner)):
            jax.tree.map(_close, key_data(mine), key_data(single))
    # ...and they did not all learn the same thing.
    p = [population.member_state(states, m).params for m in range(4)]
    assert not np.allclose(jax.tree.leaves(p[0])[0], jax.tree.leaves(p[1])[0])
    assert not np.allclose(jax.tree.leaves(p[0])[0], jax.tree.leaves(p[2])[0])


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
        train.run(population_config(tmp_path, total_env_steps=T * B, vary=vary))
    assert not (tmp_path / "run" / "members").exists()  # refused before anything was written


def test_a_vary_of_one_value_per_field_names_the_flags_to_set_instead(tmp_path):
    """num_seeds=1 and one value per varied field make one member: the error names a flag per
    field (several fields once ended in a raw unpacking ValueError)."""
    vary = "agent.learning_rate=[0.001];agent.entropy_cost=[0.02]"
    with pytest.raises(ConfigError, match=r"makes one member .* set "
                                          r"--config\.agent\.learning_rate=0\.001 "
                                          r"--config\.agent\.entropy_cost=0\.02 instead"):
        train.run(population_config(tmp_path, total_env_steps=T * B, vary=vary))


def test_sebulba_refuses_a_population(tmp_path):
    config = population_config(tmp_path, num_seeds=2, runtime="sebulba", total_env_steps=T * B)
    config.env.name = "CartPole-v1"
    with pytest.raises(ConfigError, match=r"num_seeds=2.*need runtime='anakin'"):
        train.run(config)


VARY = "agent.learning_rate=[0.001, 0.003]"
NAMES = ["00-s0-learning_rate=0.001", "01-s1-learning_rate=0.001",
         "02-s0-learning_rate=0.003", "03-s1-learning_rate=0.003"]


@pytest.fixture(scope="module")
def population_run(tmp_path_factory):
    """A population of 2 seeds x 2 learning rates trained for 2 updates, checkpointed after
    each: (its run dir, its TrainResult). Tests that change the dir work on a copy."""
    tmp = tmp_path_factory.mktemp("population")
    result = train.run(population_config(tmp, total_env_steps=T * B * 2, num_seeds=2,
                                         vary=VARY, checkpoint_every_updates=1))
    return tmp / "run", result


def test_members_are_runs_for_the_tools(population_run):
    run, first = population_run
    assert (first.updates, first.env_steps, len(first.members)) == (2, 2 * T * B, 4)
    names = sorted(os.listdir(run / "members"))
    assert names == NAMES
    for name in names:
        member = run / "members" / name
        cfg = json.loads((member / "config.json").read_text())
        assert (cfg["seed"], cfg["num_seeds"], cfg["vary"]) == (int(name[4]), 1, "")
        assert cfg["agent"]["learning_rate"] == float(name.split("=")[1])
        rows = read_metrics(member)
        assert [r["updates"] for r in rows] == [1, 2]
        # Its own TensorBoard file, holding its own rows (not another member's).
        events = list(member.glob("events.out.tfevents.*"))
        assert len(events) == 1, events
        tb_steps, _, tb_loss = rundir._load_tensorboard(str(member), "loss/total")
        assert tb_steps == [r["step"] for r in rows]
        np.testing.assert_allclose(tb_loss, [r["loss/total"] for r in rows], rtol=1e-6)
    losses = [read_metrics(run / "members" / n)[-1]["loss/total"] for n in names]
    assert len(set(losses)) == 4  # four runs, four learners
    summary = json.loads((run / "summary.json").read_text())
    assert [m["member"] for m in summary["members"]] == names
    # scripts/plot.py groups the members by setting, the seeds as the spread.
    labels = rundir.labels([str(run / "members" / n) for n in names])
    assert len(set(labels.values())) == 2
    assert rundir.load_curve(str(run / "members" / names[0]), "episode/return_mean") is not None


def test_plot_and_the_sweep_table_read_a_populations_members(population_run, tmp_path, capsys):
    """`python -m scripts.plot --aggregate iqm` and `python -m scripts.sweep table` on the population's run
    dir, as a user runs them: each setting one group (env gymnax:CartPole-v1) of its 2 seeds."""
    run, _ = population_run
    members = run / "members"
    png = tmp_path / "iqm.png"
    plot.main([str(run), "--aggregate", "iqm", "--output", str(png), "--reps", "100"])
    out = capsys.readouterr().out
    assert "plot: 4 runs in 2 setting(s)" in out, out
    image = matplotlib.image.imread(str(png))
    assert image.shape[0] > 200 and image.std() > 0
    groups = plot.group_runs(rundir.find_runs([str(run)]))
    assert groups == {
        ("agent.learning_rate=0.001", "gymnax:CartPole-v1"): [str(members / n)
                                                              for n in NAMES[:2]],
        ("agent.learning_rate=0.003", "gymnax:CartPole-v1"): [str(members / n)
                                                              for n in NAMES[2:]]}
    table = {r[0]: r for r in _table_rows(out)}
    assert set(table) == {"agent.learning_rate=0.001", "agent.learning_rate=0.003"}
    assert all(r[1] == "gymnax:CartPole-v1" and r[2] == "2" for r in table.values()), table

    # sweep.py's table of the same dirs (the runs it did not launch): a row per setting over
    # its finished seeds. A member paused by SIGTERM (summary.json's stopped_by) is not
    # finished: left out and named, as in a sweep.
    paused = tmp_path / "paused"
    shutil.copytree(run, paused, ignore=shutil.ignore_patterns("checkpoints"))
    last = paused / "members" / NAMES[3] / "summary.json"
    last.write_text(json.dumps({**json.loads(last.read_text()), "stopped_by": "SIGTERM"}))
    csv_path = tmp_path / "results.csv"
    rows = sweep.main(["table", str(paused), "--csv", str(csv_path)])
    out = capsys.readouterr().out
    finals = {n: json.loads((run / "members" / n / "summary.json").read_text())
              for n in NAMES}
    assert [(r["setting"], r["seeds"], r["of"]) for r in rows] == [
        ("agent.learning_rate=0.001", 2, 2), ("agent.learning_rate=0.003", 1, 2)]
    assert rows[0]["values"] == [finals[n]["episode/return_mean"] for n in NAMES[:2]]
    assert rows[1]["values"] == [finals[NAMES[2]]["episode/return_mean"]]
    cells = {r[0]: r for r in _table_rows(out)}
    assert cells["agent.learning_rate=0.001"][1] == "2/2"
    assert cells["agent.learning_rate=0.003"][1] == "1/2"
    assert "not counted, unfinished" in out and NAMES[3] in out
    assert csv_path.read_text().splitlines()[0].startswith("setting,seeds,mean")


def _table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the markdown tables printed in `text`."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|") and not line.startswith("| setting")
            and not line.startswith("|---")]


def test_the_population_resumes_whole_from_its_checkpoint(population_run, tmp_path):
    """One checkpoint holds the whole population; --config.resume continues every member from
    it. Not as an unbroken run would: a checkpoint holds the learner states (parameters,
    optimiser state), counters and episode windows, not the envs, and a resumed run starts
    fresh env streams (key_streams.runner_key(seed, update); anakin/loop.py). So the test is what
    resume promises: the saved states are the run's, and the resumed updates are those of the
    saved states on fresh streams (with the learning-rate schedule re-stretched from the
    checkpoint's rate to the new end, agents/schedules.py), each member with its own setting:
    the reference is each member resumed alone as a single run, so a defect shared by the
    population's init or program cannot pass on both sides."""
    source, first = population_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    assert checkpoint.list_steps(str(run / "checkpoints")) == [1, 2]
    saved = checkpoint.restore(str(run / "checkpoints" / "2"), first.learner_state)
    assert (saved.updates, saved.env_steps) == (2, 2 * T * B)
    jax.tree.map(np.testing.assert_array_equal, key_data(saved.learner_state),
                 key_data(first.learner_state))  # parameters and optimiser state, bit for bit

    config = population_config(tmp_path, total_env_steps=T * B * 4, num_seeds=2, vary=VARY,
                               resume=str(run))
    resumed = train.run(config)
    assert (resumed.updates, resumed.env_steps) == (4, 4 * T * B)
    for name in NAMES:
        rows = read_metrics(run / "members" / name)
        assert [r["step"] for r in rows] == [T * B * u for u in (1, 2, 3, 4)]
        rates = [r["optim/learning_rate"] for r in rows]
        assert rates[2] < rates[1] and rates[3] < rates[2]  # the decay goes on from its rate
    rate = lambda n, u: read_metrics(run / "members" / n)[u - 1]["optim/learning_rate"]  # noqa: E731
    assert rate(NAMES[2], 3) == pytest.approx(3 * rate(NAMES[0], 3))  # each its own setting

    # The same two updates as single runs resumed one by one, none of the population's code:
    # each member's saved state, its own agent (its setting, the re-stretched horizon), its
    # seed's fresh env streams at update 2, one-agent programs of one update per call.
    from agents import schedules
    from experiments import wiring
    sections = wiring.read(config, devices=False, env_id=False)
    ac = sections.runtime
    env = envs.make_env(sections.env.name, dict(sections.env.options or {}))
    horizon = schedules.resumed_horizon(schedules.trained_horizon(saved.metadata), 2, 4)
    network = wiring.build_network(sections, env.action_space)
    resolved = sections.spec.resolve(sections.agent, sections.shape)
    mesh = topology.make_mesh(ac.learner_device_ids)
    for m, member in enumerate(sections.members):
        cfg = dataclasses.replace(resolved, **dict(member.settings))
        agent = sections.spec.build(network, cfg, sections.shape, horizon)
        state = topology.place_replicated(population.member_state(saved.learner_state, m), mesh)
        runner = topology.place_runner(actor.init_runner(
            agent, env, key_streams.runner_key(member.seed, 2), ac.num_envs), mesh)
        update = update_program.make_update_fn(agent, env, mesh, ac.unroll_length)
        for _ in range(2):
            state, runner, _, _ = update(state, runner)
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6),
                     key_data(jax.device_get(state)),
                     key_data(population.member_state(resumed.learner_state, m)))


@pytest.mark.parametrize("overrides,match", [
    # The same arrays, the settings swapped: member 0 would go on with member 2's state.
    ({"vary": "agent.learning_rate=[0.003, 0.001]"},
     r"vary: checkpoint 'agent.learning_rate=\[0.001, 0.003\]', this run "
     r"'agent.learning_rate=\[0.003, 0.001\]'"),
    ({"vary": "agent.learning_rate=[0.001, 0.01]"},
     r"vary: checkpoint 'agent.learning_rate=\[0.001, 0.003\]', this run "
     r"'agent.learning_rate=\[0.001, 0.01\]'"),
    ({"seed": 5}, r"seed: checkpoint 0, this run 5"),
    ({"num_seeds": 1, "vary": ""}, r"the checkpoint holds a population and this run is one "
                                   r"agent"),
], ids=["reordered", "changed", "seed", "one-agent"])
def test_a_resume_with_other_members_is_refused_naming_the_field(
        population_run, tmp_path, overrides, match):
    """Member i resumes member i's saved state: a resume whose members differ (same shapes)
    would splice two runs into one curve. It is refused before anything trains."""
    source, _ = population_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    before = {n: read_metrics(run / "members" / n) for n in NAMES}
    config = population_config(tmp_path, total_env_steps=T * B * 4, num_seeds=2, vary=VARY,
                               resume=str(run))
    for key, value in overrides.items():
        config[key] = value
    with pytest.raises(ConfigError, match=r"resume=.*: .*" + match):
        train.run(config)
    assert {n: read_metrics(run / "members" / n) for n in NAMES} == before
    assert checkpoint.list_steps(str(run / "checkpoints")) == [1, 2]
