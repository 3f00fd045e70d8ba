"""anakin/suites/xminigrid_suite.py: XLand-MiniGrid's MiniGrid envs ("xminigrid:<id>") as
`RawEnv`s under `AutoReset`.

The episode semantics are checked against the suite's own `step` under its
`DmEnvAutoResetWrapper` (which resets one step after an episode ends, as `AutoReset` does) on
hand-picked episodes of MiniGrid-Empty-5x5: one reaching the goal on the time limit's step
(termination wins), one cut by the time limit, the reset step after each.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("xminigrid", reason="the xminigrid extra is not installed: "
                                        "pip install -r requirements-xminigrid.txt")
import xminigrid  # noqa: E402
from xminigrid.wrappers import DmEnvAutoResetWrapper  # noqa: E402

from anakin import envs  # noqa: E402
from anakin.suites import xminigrid_suite  # noqa: E402
from tests.anakin.suites.common import (  # noqa: E402
    assert_step_keeps_state_types, few_updates, step_through)

EMPTY = "MiniGrid-Empty-5x5"
# Actions: 0 forward, 1 turn clockwise, 2 turn counterclockwise. The agent starts at (1, 1)
# facing right; the goal is at (3, 3): 5 steps.
TO_GOAL = [0, 0, 1, 0, 0]
SPIN = [1] * 5  # turning in place: never ends before the time limit


def _own_steps(env_id, actions, max_steps, key=0):
    """The suite's own episode: `reset(key)` then `step` under its dm_env-style auto-reset."""
    env, params = xminigrid.make(env_id, max_steps=max_steps)
    env = DmEnvAutoResetWrapper(env)
    timestep = env.reset(params, jax.random.key(key))
    step = jax.jit(env.step, static_argnums=0)
    out = [timestep]
    for action in actions:
        timestep = step(params, timestep, jnp.int32(action))
        out.append(timestep)
    return out


def test_episodes_match_the_suite_own_step():
    # max_steps 5: the goal is reached on the time limit's step (discount 0: terminated); the
    # spin is cut by the time limit (discount 1: truncated).
    actions = TO_GOAL + [0] + SPIN + [0]
    env = envs.make_env(f"xminigrid:{EMPTY}", {"max_steps": 5})
    steps = step_through(env, actions)
    own = _own_steps(EMPTY, actions, max_steps=5)
    for i, (s, before, after) in enumerate(zip(steps, own, own[1:])):
        np.testing.assert_array_equal(s.obs, np.asarray(after.observation, np.float32))
        assert s.obs.dtype == np.float32 and s.reward.dtype == np.float32
        assert float(s.reward) == pytest.approx(float(after.reward)), i
        ended = bool(after.last())
        assert bool(s.terminated) == (ended and float(after.discount) == 0.0), i
        assert bool(s.truncated) == (ended and float(after.discount) == 1.0), i
        assert bool(s.valid) == (not bool(before.last())), i  # the wrapper resets after an end
    rows = [(float(s.reward), bool(s.terminated), bool(s.truncated), bool(s.valid))
            for s in steps]
    # The goal on the time limit's step pays 1 - 0.9 * 5 / 5.
    assert rows[4] == (pytest.approx(0.1), True, False, True)
    assert rows[5] == (0.0, False, False, False)   # reset step: the action (forward) ignored
    assert rows[10] == (0.0, False, True, True)    # the time limit cuts the spin
    assert rows[11] == (0.0, False, False, False)  # reset step
    first = np.asarray(own[0].observation, np.float32)
    np.testing.assert_array_equal(steps[5].obs, first)
    np.testing.assert_array_equal(steps[11].obs, first)
    assert not np.array_equal(steps[4].obs, first)  # the real final observation
    # The true return: the suite's own rewards over the first episode.
    assert sum(r for r, *_ in rows[:5]) == pytest.approx(
        sum(float(t.reward) for t in own[1:6]))


def test_spaces_and_options():
    env = envs.make_env(f"xminigrid:{EMPTY}")
    assert str(env.action_space) == "Discrete(6)"
    space = env.observation_space
    assert space.shape == (7, 7, 2) and space.dtype == np.float32
    assert env.raw.params.max_steps == 4 * 5 * 5  # the suite's (MiniGrid's) default
    obs = np.asarray(env.reset(jax.random.key(0)).obs)
    assert obs.dtype == np.float32 and space.contains(obs)
    small = envs.make_env(f"xminigrid:{EMPTY}", {"view_size": 3, "max_steps": 7})
    assert small.observation_space.shape == (3, 3, 2) and small.raw.params.max_steps == 7


def test_env_ids_are_the_installed_minigrid_ids():
    assert set(xminigrid_suite.MINIGRID_IDS) == {
        i for i in xminigrid.registered_environments() if i.startswith("MiniGrid-")}


def test_unknown_id_xland_id_and_options_name_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown xminigrid env 'MiniGrid-Nope'.*Empty-5x5"):
        envs.make_env("xminigrid:MiniGrid-Nope")
    with pytest.raises(ValueError, match="XLand-MiniGrid-R1-9x9.*benchmark.*Empty-5x5"):
        envs.make_env("xminigrid:XLand-MiniGrid-R1-9x9")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['height'\].*max_steps"):
        envs.make_env(f"xminigrid:{EMPTY}", {"height": 7})
    with pytest.raises(ValueError, match="view_size=0"):
        envs.make_env(f"xminigrid:{EMPTY}", {"view_size": 0})


def test_a_step_keeps_the_state_types():
    """The suite's weakly typed constants come back strong (no second compilation)."""
    assert_step_keeps_state_types(envs.make_env(f"xminigrid:{EMPTY}"),
                                  jax.ShapeDtypeStruct((), jnp.int32))


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_few_updates(tmp_path, runtime):
    few_updates(tmp_path, f"xminigrid:{EMPTY}", runtime)
