"""anakin/suites/brax_suite.py: brax envs ("brax:<env>") as `RawEnv`s under `AutoReset`.

The episode semantics are checked against brax's own time-limited env (`brax.envs.create`
without its auto-reset: the raw env's step under brax's EpisodeWrapper) on hand-picked
episodes of inverted_pendulum (the smallest physics model, cheapest to compile; the default
generalized backend): one terminated by the pole falling, one cut by the time limit, the reset
step after each. The quick runs under each runtime use brax's physics-free "fast" env; the
slow ones run inverted_pendulum. Non-slow tests: 76 s wall (38 s CPU) on the loaded 2-core CPU.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("brax", reason="the brax extra is not installed: "
                                   "pip install -r requirements-brax.txt")
import brax.envs  # noqa: E402

from anakin import envs  # noqa: E402
from anakin.suites import brax_suite  # noqa: E402
from tests.anakin.suites.common import few_updates, step_through  # noqa: E402

PENDULUM = "brax:inverted_pendulum"
LIMIT = 8
PUSH = [1.0] * 2   # full force one way: the pole passes 0.2 rad on the 2nd step (terminated)
HOLD = [0.0] * LIMIT  # no force: the pole stays up (0.02 rad) for all LIMIT steps (truncated)


def _own_episodes(keys, actions):
    """brax's own episodes, one per key: `reset(key)` then `actions[i]` ([T, 1] each) by the
    raw env's step under brax's EpisodeWrapper (episode_length=LIMIT, no auto-reset), all in
    one jitted program (one compile); returns (reset states, step states [episode, T])."""
    env = brax.envs.create("inverted_pendulum", episode_length=LIMIT, auto_reset=False)

    def episode(key, actions):
        first = env.reset(key)

        def body(state, action):
            state = env.step(state, action)
            return state, state
        return first, jax.lax.scan(body, first, actions)[1]

    return jax.device_get(jax.jit(jax.vmap(episode))(keys, actions))


def test_episodes_match_brax_own_step():
    # Episode 1: PUSH (terminates on its last step), then a reset step (action ignored);
    # episode 2: HOLD (cut by the time limit), then a reset step.
    actions = PUSH + [1.0] + HOLD + [1.0]
    env = envs.make_env(PENDULUM, {"episode_length": LIMIT})
    steps = step_through(env, [jnp.full((1,), a, jnp.float32) for a in actions])
    first = len(PUSH)                    # the reset step after episode 1
    second = first + 1 + LIMIT           # the reset step after episode 2
    # The reset keys AutoReset uses: reset(key 0), then the reset half of the step's key.
    keys = jnp.stack([jax.random.key(0)] + [jax.random.split(jax.random.key(1000 + i))[1]
                                           for i in (first, second)])
    own_actions = jnp.array([PUSH + [1.0] * (LIMIT - len(PUSH)), HOLD, HOLD])[..., None]
    starts, own = _own_episodes(keys, own_actions)
    # brax's own episodes, cut at its `done`: they end where ours do.
    ends = [int(np.argmax(own.done[e] > 0)) + 1 for e in range(2)]
    assert ends == [len(PUSH), LIMIT]
    real = [s for s in steps if s.valid]
    own_rows = [(e, t) for e in range(2) for t in range(ends[e])]
    assert len(real) == len(own_rows)
    for i, (s, (e, t)) in enumerate(zip(real, own_rows)):
        np.testing.assert_allclose(s.obs, own.obs[e, t], rtol=1e-6, atol=1e-6)
        assert s.obs.dtype == np.float32 and s.reward.dtype == np.float32
        assert float(s.reward) == float(own.reward[e, t]), i
        truncation = bool(own.info["truncation"][e, t])  # brax's own time-limit flag
        assert bool(s.truncated) == truncation, i
        assert bool(s.terminated) == (bool(own.done[e, t]) and not truncation), i
    rows = [(float(s.reward), bool(s.terminated), bool(s.truncated), bool(s.valid))
            for s in steps]
    assert rows[first - 1] == (1.0, True, False, True)   # the pole fell
    assert rows[first] == (0.0, False, False, False)     # reset step: action ignored
    assert rows[second - 1] == (1.0, False, True, True)  # the time limit
    assert rows[second] == (0.0, False, False, False)    # reset step
    assert all(r[3] and not (r[1] or r[2]) for r in rows[:first - 1] + rows[first + 1:second - 1])
    # The reset steps show the new episode's first observation, not the final one.
    np.testing.assert_allclose(steps[first].obs, starts.obs[1], atol=1e-7)
    np.testing.assert_allclose(steps[second].obs, starts.obs[2], atol=1e-7)
    assert abs(float(steps[first - 1].obs[1])) > 0.2  # the real final observation
    # The true return: brax's own summed reward of each episode.
    own_returns = [float(own.info["episode_metrics"]["sum_reward"][e, ends[e] - 1])
                   for e in range(2)]
    assert own_returns == [len(PUSH), LIMIT]
    assert [sum(r for r, *_ in rows[:first]), sum(r for r, *_ in rows[first:second])] \
        == own_returns


def test_spaces_defaults_and_lazy_build():
    env = envs.make_env(PENDULUM)
    raw = env.raw
    assert "env" not in vars(raw)  # nothing built (no JAX backend needed) until first use
    assert raw.backend == brax_suite.DEFAULT_BACKEND == "generalized"
    assert raw.episode_length == brax_suite.DEFAULT_EPISODE_LENGTH == 1000
    assert str(env.action_space) == "Box(-1.0, 1.0, (1,), float32)"
    space = env.observation_space
    assert space.shape == (4,) and space.dtype == np.float32
    obs = np.asarray(env.reset(jax.random.key(0)).obs)
    assert obs.dtype == np.float32 and space.contains(obs)
    # Constructor options reach the env (PipelineEnv's n_frames: physics steps per step).
    assert envs.make_env(PENDULUM, {"n_frames": 3}).raw.env._n_frames == 3


def test_env_ids_are_brax_registry():
    assert set(brax_suite.registered()) == set(brax.envs._envs)
    assert {"ant", "halfcheetah", "hopper", "inverted_pendulum"} <= set(brax_suite.registered())


def test_unknown_id_and_options_name_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown brax env 'antt'.*halfcheetah"):
        envs.make_env("brax:antt")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['max_steps'\].*episode_length"):
        envs.make_env(PENDULUM, {"max_steps": 5})
    with pytest.raises(ValueError, match="unknown backend 'cuda'.*generalized"):
        envs.make_env(PENDULUM, {"backend": "cuda"})
    with pytest.raises(ValueError, match="episode_length must be an int >= 1"):
        envs.make_env(PENDULUM, {"episode_length": 0})
    with pytest.raises(ValueError, match=r"\['ctrl_cost'\].*ctrl_cost_weight"):
        envs.make_env("brax:ant", {"ctrl_cost": 0.1})


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_few_updates(tmp_path, runtime):
    # brax's "fast" (its unit-test env: a point pushed along a line, no physics pipeline):
    # compiling a runtime's programs around a physics pipeline costs ~30 s of CPU per runtime
    # here (inverted_pendulum, generalized), so the physics runs under the runtimes only in
    # the slow tests below.
    few_updates(tmp_path, "brax:fast", runtime)


def test_info_holds_brax_own_metrics():
    """The step's info is brax's per-step metrics under "metrics" (env.episode_metrics can
    name them, e.g. metrics.*:sum for ant's reward terms); each equals brax's own."""
    # The spring backend: the same metrics as the default one, compiled several times faster.
    env = envs.make_env("brax:ant", {"episode_length": 5, "backend": "spring"})
    fields = envs.info_fields(env)
    assert {"metrics.reward_forward", "metrics.reward_ctrl", "metrics.x_velocity"} <= set(fields)
    state = env.reset(jax.random.key(0))
    action = jnp.full(env.action_space.shape, 0.5, jnp.float32)
    _, s = jax.jit(env.step)(jax.random.key(1), state, action)
    own = jax.jit(env.raw.env.step)(state.inner.inner, action)
    for name in ("reward_forward", "reward_ctrl", "x_velocity"):
        assert float(s.info["metrics"][name]) == pytest.approx(float(own.metrics[name]))
