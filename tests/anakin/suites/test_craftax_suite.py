"""anakin/suites/craftax_suite.py: Craftax as a `RawEnv` under `AutoReset`.

The semantics are checked step by step against the suite's own step (its no-auto-reset env's
`step_env` and `reset_env`, what that env's `step` and `reset` run, fed the same keys) on
hand-picked episodes of Craftax-Classic-Symbolic-v1, the cheapest id: a death in lava
(terminated, not truncated), a time limit (`max_timesteps`, truncated, not terminated), the
reset step after each, and each episode's return. Compiling a Craftax step is slow on CPU (about
15-20 s of CPU time for one jitted step), so the semantics tests share one compiled program and
the runs under the runtimes (each compiles its own) are marked slow with the learning check.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("craftax", reason="the craftax extra is not installed: "
                                      "pip install -r requirements-craftax.txt")

from anakin import envs  # noqa: E402

NAME = "craftax:Craftax-Classic-Symbolic-v1"
LIMIT = 8  # max_timesteps of the semantics env: a time-limit step within a few steps

# Classic actions (craftax.craftax_classic.constants.Action)
NOOP, RIGHT, DO = 0, 2, 5


class Replay:
    """The adapter's env under `AutoReset` next to the suite's own no-auto-reset env, stepped
    with the same keys: `step` returns the adapter's `Step` and the suite's answer for it
    (`step_env` on a real step, `reset_env` on a reset step: what its no-auto-reset `step` and
    `reset` run). Both are one jitted program (XLA merges the shared work: one compile of
    about 20 s of CPU time instead of two)."""

    def __init__(self):
        from craftax.craftax_env import make_craftax_env_from_name
        self.env = envs.make_env(NAME, {"max_timesteps": LIMIT})
        suite = make_craftax_env_from_name("Craftax-Classic-Symbolic-v1", auto_reset=False)
        params = self.env.raw.params

        def both(key, state, action):
            k_step, k_reset = jax.random.split(key)  # AutoReset's split of the step's key
            new_state, s = self.env.step(key, state, action)
            obs, _, reward, done, _ = suite.step_env(k_step, state.inner, action, params)
            first, _ = suite.reset_env(k_reset, params)
            return new_state, s, (obs, reward, done, first)

        self._both = jax.jit(both)

    def reset(self, key):
        """The env's state after the reset step that starts its first episode (a state whose
        `done` is set, so the compiled step resets it: no separate compile of `reset`)."""
        shapes = jax.eval_shape(self.env.reset, key)
        ended = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)._replace(
            done=jnp.ones((), bool))
        return self.step(ended, key, NOOP)[0]

    def step(self, state, key, action):
        """(new state, the adapter's Step, the suite's (obs, reward, done) for the same keys)."""
        new_state, s, ref = self._both(key, state, jnp.int32(action))
        s, (obs, reward, done, first) = jax.device_get((s, ref))
        ref = (first, 0.0, False) if bool(state.done) else (obs, float(reward), bool(done))
        return new_state, s, ref


@pytest.fixture(scope="module")
def replay():
    return Replay()


def _lava_and_tree(state):
    """`state` with a tree in front of the player (it faces up at the start) and lava on its
    right: DO collects wood (+1, an achievement), RIGHT walks into the lava (death)."""
    from craftax.craftax_classic.constants import BlockType
    inner = state.inner
    x, y = np.asarray(inner.player_position)
    world = inner.map.at[x - 1, y].set(BlockType.TREE.value).at[x, y + 1].set(
        BlockType.LAVA.value)
    return state._replace(inner=inner.replace(map=world))


def test_terminal_and_time_limit_steps_match_the_suite(replay):
    state = _lava_and_tree(replay.reset(jax.random.key(0)))
    # Episode 1: wood, a wait, then the lava: terminated on the 3rd step. Then a reset step
    # (its action, RIGHT, ignored). Episode 2: LIMIT waits reach the time limit, then a reset.
    actions = [DO, NOOP, RIGHT, RIGHT] + [NOOP] * LIMIT + [DO]
    rows, returns, suite_returns, ret, suite_ret = [], [], [], 0.0, 0.0
    for i, a in enumerate(actions):
        state, s, (obs, reward, done) = replay.step(state, jax.random.key(100 + i), a)
        assert s.obs.dtype == np.float32 and s.obs.shape == (1345,)
        # The same computation in another fusion: the light level may differ in the last bit.
        np.testing.assert_allclose(s.obs, obs, rtol=1e-6, atol=1e-6)
        assert float(s.reward) == pytest.approx(reward, abs=1e-6)
        assert bool(s.terminated or s.truncated) == done
        rows.append((bool(s.terminated), bool(s.truncated), bool(s.valid)))
        if i < 3:  # the suite's info: each achievement, 100 on a game's last step if unlocked
            wood = float(s.info["Achievements/collect_wood"])
            assert wood == (100.0 if i == 2 else 0.0), i  # the first step's wood, at the end
            assert float(s.info["Achievements/collect_diamond"]) == 0.0, i
        ret, suite_ret = ret + float(s.reward), suite_ret + reward
        if done:
            returns.append(ret)
            suite_returns.append(suite_ret)
            ret = suite_ret = 0.0
    real = (False, False, True)
    assert rows == ([real, real, (True, False, True),     # the lava: terminated
                     (False, False, False)]                 # reset step
                    + [real] * (LIMIT - 1) + [(False, True, True),  # time limit: truncated
                                              (False, False, False)])  # reset step
    assert returns == pytest.approx(suite_returns, abs=1e-5)
    # The wood achievement (+1), then the lava sets health 9 -> 0 (-0.9 on the terminal step).
    assert returns[0] == pytest.approx(0.1, abs=1e-5)


def test_reset_step_after_the_final_step_starts_a_new_episode(replay):
    """The final observation is kept on the step that ends an episode (the suite's own
    auto-reset would have swapped in the next episode's first one there); the reset step then
    gives that first observation, reward 0 and valid False, and the clock restarts."""
    state = replay.reset(jax.random.key(1))
    for i in range(LIMIT):
        state, s, _ = replay.step(state, jax.random.key(200 + i), NOOP)
    assert bool(s.truncated) and int(state.inner.timestep) == LIMIT
    final = s.obs
    state, s, (first, _, _) = replay.step(state, jax.random.key(300), DO)
    assert not bool(s.valid) and float(s.reward) == 0.0
    assert not bool(s.terminated) and not bool(s.truncated)
    np.testing.assert_allclose(s.obs, first, rtol=1e-6, atol=1e-6)
    assert not np.allclose(s.obs, final)
    assert int(state.inner.timestep) == 0


def test_spaces():
    from gymnasium import spaces
    env = envs.make_env(NAME)
    assert env.observation_space == spaces.Box(0.0, 1.0, (1345,), np.float32)
    assert env.action_space == spaces.Discrete(17)
    env = envs.make_env("craftax:Craftax-Symbolic-v1")
    assert env.observation_space == spaces.Box(0.0, 1.0, (8268,), np.float32)
    assert env.action_space == spaces.Discrete(43)
    assert env.raw.params.max_timesteps == 100_000  # the suite's defaults, options unset


def test_unknown_id_and_option_name_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown craftax env.*craftax:Craftax-Classic-Symbolic"):
        envs.make_env("craftax:Craftax-Classic-v1")
    with pytest.raises(ValueError, match=r"unknown EnvParams field.*\['max_timestep'\].*"
                                         "max_timesteps"):
        envs.make_env(NAME, {"max_timestep": 5})


def test_make_starts_no_backend_and_first_use_may_be_traced():
    """`make` imports no craftax env module (they build jnp constants: a JAX backend would
    start). The first use may then be inside a jitted function (a space read by a traced
    policy, a step): craftax's module constants must still be plain arrays, not tracers of that
    trace (a later trace that reads them fails: "Encountered an unexpected tracer"). A fresh
    process, where craftax's env modules are not imported yet."""
    import subprocess
    import sys
    code = f"""
import jax
from jax._src import xla_bridge
from anakin import envs
env = envs.make_env({NAME!r}, {{'max_timesteps': 5}})
assert not xla_bridge.backends_are_initialized()
jax.jit(lambda x: x + env.action_space.n)(1)
from craftax.craftax_classic import constants
assert not isinstance(constants.DIRECTIONS, jax.core.Tracer), type(constants.DIRECTIONS)
"""
    subprocess.run([sys.executable, "-c", code], check=True)


# Slow: each run compiles its own Craftax step (the env step alone is ~20 s of CPU time on a
# fresh compilation cache): measured ~52 s (Anakin) and ~50 s (Sebulba) of CPU time each, cold.
