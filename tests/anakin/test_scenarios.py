"""Randomised scenarios (env.randomize, podracer/scenarios.py) on gymnax envs.

- The text: each distribution parsed, each malformed item refused naming it.
- Draws: per env and per reset, in range, from the stated distribution (a Kolmogorov-Smirnov
  test and a binomial bound, each with a false-alarm rate of 1e-3 at these fixed seeds),
  independent across envs; kept for a whole episode; reported in the step's info.
- The physics uses them: a step equals gymnax's own step with those EnvParams (CartPole's
  derived fields recomputed).
- Refusals: fields an env cannot vary (derived, the time limit, unknown), suites and registered
  JAX envs, an EnvPool id's missing field on Sebulba (host routes:
  tests/sebulba/test_host_scenarios.py, test_scenario_pools.py).
- A population: members draw their own scenarios (Anakin run, episode metric of the drawn
  length).
- Per-bin summaries: the bins of each distribution; a drawn field is logged with its bins (a
  run's rows carry the return per bin on both runtimes).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from anakin import envs
from experiments import train
from podracer import scenarios
from podracer.episode_metrics import EpisodeMetric
from podracer.validation import ConfigError
from sebulba.envs import EnvConfig

N, T = 64, 200


def _play(env, seed: int = 0):
    """N envs, T steps of random actions: (steps, the drawn EnvParams in the env states after
    each step), on the host."""
    state = jax.vmap(env.reset)(jax.random.split(jax.random.key(seed), N))

    def body(state, k):
        action = jax.random.randint(k, (N,), 0, 2)
        state, step = jax.vmap(env.step)(jax.random.split(k, N), state, action)
        return state, (step, state.inner[1])

    _, out = jax.lax.scan(body, state, jax.random.split(jax.random.key(seed + 1), T))
    return jax.device_get(out)


def _episode_draws(params, valid, field: str) -> np.ndarray:
    """One value per episode: each env's value after its first step, then after each reset
    step (the reset step's state holds the new episode's draw)."""
    values = np.asarray(getattr(params, field))
    starts = ~np.asarray(valid)
    starts[0] = True
    return values[starts]


@pytest.mark.parametrize("text, draws", [
    ("", ()),
    ("length=uniform(0.3, 0.9)", (scenarios.Draw("length", "uniform", (0.3, 0.9)),)),
    ("m=choice(1, 2.5); g = normal(10, 0.5) ;",
     (scenarios.Draw("m", "choice", (1.0, 2.5)), scenarios.Draw("g", "normal", (10.0, 0.5)))),
    ("l=loguniform(0.1, 1)", (scenarios.Draw("l", "loguniform", (0.1, 1.0)),)),
    ("l=tests.fakes.scenario_fns:short_or_long",
     (scenarios.Draw("l", "function", function="tests.fakes.scenario_fns:short_or_long"),)),
])
def test_parse(text, draws):
    assert scenarios.parse(text) == draws


@pytest.mark.parametrize("text, match", [
    ("length", r"'length' is not FIELD=DISTRIBUTION"),
    ("length=gauss(1, 2)", r"length=gauss\(1, 2\): the distribution must be one of uniform"),
    ("length=uniform(0.9, 0.3)", r"needs low < high"),
    ("length=uniform(1)", r"uniform takes 2 numbers, got 1"),
    ("length=loguniform(0, 1)", r"loguniform needs 0 < low"),
    ("length=normal(1, 0)", r"normal needs std > 0"),
    ("length=choice()", r"choice needs at least one value"),
    ("length=uniform(a, 1)", r"the arguments must be finite numbers"),
    ("length=choice(1); length=choice(2)", r"'length' is given twice"),
])
def test_parse_refuses_naming_the_item(text, match):
    with pytest.raises(ValueError, match=match):
        scenarios.parse(text)
    with pytest.raises(ValueError, match=r"^randomize="):  # the config field says which
        EnvConfig(name="gymnax:CartPole-v1", randomize=text)


def test_draws_per_env_and_reset_kept_through_the_episode():
    env = envs.make_env("gymnax:CartPole-v1", {},
                        "length=uniform(0.3, 0.9); gravity=choice(9.8, 3.7)")
    steps, params = _play(env)
    length, valid = np.asarray(params.length), np.asarray(steps.valid)
    # Kept within an episode: a value changes only on a reset step (valid False).
    changed = length[1:] != length[:-1]
    assert not (changed & valid[1:]).any()
    assert changed[~valid[1:]].mean() > 0.99  # and a reset draws anew
    # The info of a valid step reports its episode's scenario.
    np.testing.assert_array_equal(np.asarray(steps.info["scenario"]["length"])[valid],
                                  length[valid])
    draws = _episode_draws(params, valid, "length")
    assert draws.size > 5 * N  # several episodes per env
    assert ((draws >= 0.3) & (draws < 0.9)).all()
    assert stats.kstest(draws, stats.uniform(0.3, 0.6).cdf).pvalue > 1e-3
    assert len(np.unique(length[0])) == N  # envs draw independently
    gravity = _episode_draws(params, valid, "gravity")
    assert set(np.unique(gravity).tolist()) == {np.float32(9.8), np.float32(3.7)}
    share = (gravity == np.float32(9.8)).mean()
    assert abs(share - 0.5) < 3.3 * 0.5 / np.sqrt(gravity.size)  # two-sided 1e-3
    # No draw is correlated with its neighbour env's (independent keys per env).
    assert abs(np.corrcoef(length[0, :-1], length[0, 1:])[0, 1]) < 3.3 / np.sqrt(N)


def test_a_step_is_gymnax_step_with_the_drawn_params():
    import gymnax
    env = envs.make_env("gymnax:CartPole-v1", {}, "length=uniform(0.3, 0.9)")
    state = env.reset(jax.random.key(3))
    inner, params = state.inner
    assert params.polemass_length == pytest.approx(params.masspole * params.length)
    gym_env, _ = gymnax.make("CartPole-v1")
    key = jax.random.key(4)
    new, step = env.step(key, state, jnp.int32(1))
    k_step, _ = jax.random.split(key)
    obs, _, reward, done, _ = gym_env.step_env(k_step, inner, jnp.int32(1), params)
    np.testing.assert_allclose(step.obs, obs)
    assert float(step.info["scenario"]["length"]) == float(params.length)
    # An unvaried env keeps gymnax's defaults and no scenario entry.
    plain = envs.make_env("gymnax:CartPole-v1")
    assert "scenario" not in plain.step(key, plain.reset(key), jnp.int32(1))[1].info


def test_options_keep_cartpoles_derived_fields_consistent():
    env = envs.make_env("gymnax:CartPole-v1", {"length": 1.0, "masspole": 0.2})
    assert env.raw.params.polemass_length == pytest.approx(0.2)
    assert env.raw.params.total_mass == pytest.approx(1.2)
    with pytest.raises(ValueError, match=r"\['polemass_length'\] follow from other fields"):
        envs.make_env("gymnax:CartPole-v1", {"polemass_length": 0.3})


def test_a_users_distribution():
    env = envs.make_env("gymnax:Pendulum-v1", {}, "l=tests.fakes.scenario_fns:short_or_long")
    draws = np.asarray(jax.vmap(lambda k: env.reset(k).inner[1].l)(
        jax.random.split(jax.random.key(0), 256)))
    assert set(np.unique(draws).tolist()) == {0.5, 1.0}
    with pytest.raises(ValueError, match=r"l=no_such_module:f: No module named"):
        envs.make_env("gymnax:Pendulum-v1", {}, "l=no_such_module:f")


@pytest.mark.parametrize("name, text, match", [
    ("gymnax:CartPole-v1", "total_mass=uniform(1, 2)",
     r"cannot vary 'total_mass'; the fields it can vary: force_mag, gravity, length, masscart"),
    ("gymnax:CartPole-v1", "max_steps_in_episode=uniform(10, 20)",
     r"cannot vary 'max_steps_in_episode'"),
    ("gymnax:Pendulum-v1", "length=uniform(1, 2)", r"cannot vary 'length'.*: dt, g, l, m"),
    ("brax:ant", "mass=uniform(1, 2)", r"randomised scenarios vary gymnax EnvParams fields"),
])
def test_fields_an_env_cannot_vary_are_refused(name, text, match):
    with pytest.raises(ValueError, match=match):
        envs.make_env(name, {}, text)


def test_sebulba_checks_envpool_fields_and_varies_jax_envs_on_the_host(impala_classic_config):
    config = impala_classic_config()
    config.env.randomize = "length=uniform(0.3, 0.9)"
    with pytest.raises(ConfigError, match=r"EnvPool CartPole-v1 cannot vary 'length'; it has "
                                          r"no field that can vary"):
        train.run(config)
    from experiments.wiring.drivers import sebulba as sebulba_driver
    host = sebulba_driver.host_envs(EnvConfig(name="gymnax:CartPole-v1",
                                              randomize="length=uniform(0.3, 0.9)"))(4, 0)
    host.reset()
    lengths = host.step(np.zeros(4, np.int32)).info["scenario"]["length"]
    assert len(set(np.asarray(lengths).tolist())) == 4


def test_population_members_draw_their_own_scenarios(ppo_gymnax_config):
    config = ppo_gymnax_config(num_seeds=2, num_envs=8, unroll_length=16,
                               total_env_steps=2 * 8 * 16 * 4, checkpoint_keep=0)
    config.env.randomize = "length=uniform(0.3, 0.9)"
    config.env.episode_metrics = "scenario.length:last"
    result = train.run(config)
    means = [m["episode_summary"]["episode/scenario/length"] for m in result.members]
    assert all(0.3 <= v < 0.9 for v in means), means
    assert means[0] != means[1]


@pytest.mark.parametrize("text, edges, labels", [
    ("l=uniform(0.5, 1.5)", (0.75, 1.0, 1.25), ("0.5-0.75", "0.75-1", "1-1.25", "1.25-1.5")),
    ("l=loguniform(1, 16)", (2.0, 4.0, 8.0), ("1-2", "2-4", "4-8", "8-16")),
    ("m=choice(2, 0.5, 1, 2)", (0.75, 1.5), ("0.5", "1", "2")),
    ("g=normal(10, 0.5)", (9.5, 10.0, 10.5), ("<9.5", "9.5-10", "10-10.5", ">10.5")),
])
def test_bins_of_each_distribution(text, edges, labels):
    grouping = scenarios.bins(scenarios.parse(text)[0])
    assert grouping.edges == pytest.approx(edges) and grouping.labels == labels


def test_each_drawn_field_is_logged_with_its_bins():
    """Added as scenario.<field>:last; a field the user logs already gets the bins; a
    distribution of one's own has no known range, so no bins."""
    crashed = EpisodeMetric("crashed", "max", "crashed")
    mine = EpisodeMetric("scenario.m", "mean", "scenario/m")
    got = scenarios.logged((crashed, mine),
                           "l=uniform(0.5, 1.5); m=choice(1, 2); "
                           "g=tests.fakes.scenario_fns:short_or_long")
    assert [(m.field, m.reduction, m.name) for m in got] == [
        ("crashed", "max", "crashed"), ("scenario.m", "mean", "scenario/m"),
        ("scenario.l", "last", "scenario/l")]
    assert got[0].bins is None and got[1].bins.labels == ("1", "2")
    assert got[2].bins.labels[0] == "0.5-0.75"
    assert scenarios.logged((crashed,), "") == (crashed,)


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_periodic_evaluation_plays_the_held_out_scenarios(ppo_gymnax_config, tmp_path,
                                                          runtime):
    """eval_randomize: training draws lengths in [0.3, 0.9), evaluation plays 2.0 (Anakin on
    the device; Sebulba steps the same JAX env on the host). The drawn length is logged
    without being asked for, with the return per length bin."""
    from tests.helpers import read_metrics
    overrides = dict(runtime=runtime, num_envs=8, unroll_length=16, total_env_steps=8 * 16 * 2,
                     eval_every_updates=1, eval_episodes=4, eval_num_envs=2,
                     checkpoint_keep=0, eval_randomize="length=choice(2.0)")
    if runtime == "sebulba":
        overrides.update(actor_device_ids=(0,), learner_device_ids=(1,), num_actor_threads=1)
    config = ppo_gymnax_config(**overrides)
    config.env.randomize = "length=uniform(0.3, 0.9)"
    train.run(config)
    rows = read_metrics(tmp_path / "run")
    binned = [r for r in rows if "episode/scenario/length" in r]
    labels = ("0.3-0.45", "0.45-0.6", "0.6-0.75", "0.75-0.9")
    for r in binned:
        games = [r.get(f"episode/scenario_bins/length/{b}/games", 0) for b in labels]
        assert sum(games) == min(r["episode/count"], 100), r
    assert any(f"episode/scenario_bins/length/{b}/return_mean" in binned[-1] for b in labels)
    trained = [r["episode/scenario/length"] for r in rows if "episode/scenario/length" in r]
    played = [r["eval/scenario/length"] for r in rows if "eval/scenario/length" in r]
    assert trained and all(0.3 <= v < 0.9 for v in trained)
    assert played and all(v == pytest.approx(2.0) for v in played)


@pytest.mark.parametrize("overrides, match", [
    ({"eval_randomize": "length=gauss(1, 2)"}, r"eval_randomize='length=gauss\(1, 2\)': "),
    ({"eval_randomize": "mass=choice(1.0)"}, r"eval_randomize='mass=choice\(1.0\)': .*cannot "
                                             r"vary 'mass'"),
])
def test_eval_randomize_errors_name_the_field(ppo_gymnax_config, overrides, match):
    with pytest.raises(ConfigError, match=match):
        train.run(ppo_gymnax_config(**overrides))


def test_eval_randomize_is_refused_for_a_field_an_envpool_env_lacks(impala_classic_config):
    with pytest.raises(ConfigError, match=r"eval_randomize='length=choice\(2.0\)': .*"
                                          r"EnvPool CartPole-v1 cannot vary 'length'"):
        train.run(impala_classic_config(eval_randomize="length=choice(2.0)"))
