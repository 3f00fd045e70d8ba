"""anakin/suites/navix_suite.py: NAVIX envs ("navix:<id>") as `RawEnv`s under `AutoReset`.

The episode semantics are checked against navix's own `step` (which resets one step after an
episode ends, as `AutoReset` does) on hand-picked episodes of Navix-Empty-5x5-v0: one reaching
the goal on the time limit's step (termination wins), one cut by the time limit, the reset step
after each.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("navix", reason="the navix extra is not installed: "
                                    "pip install -r requirements-navix.txt")
import navix  # noqa: E402

from anakin import envs  # noqa: E402
from anakin.suites import navix_suite  # noqa: E402
from tests.anakin.suites.common import (  # noqa: E402
    assert_step_keeps_state_types, few_updates, step_through)

EMPTY = "Navix-Empty-5x5-v0"
# MiniGrid actions: 0 turn left, 1 turn right, 2 forward. The agent starts at (1, 1) facing
# east; the goal is at (3, 3): 5 steps.
TO_GOAL = [2, 2, 1, 2, 2]
SPIN = [0] * 5  # turning in place: never ends before the time limit


def _own_steps(env_id, actions, max_steps, key=0):
    """navix's own episode: `reset(key)` then its `step` (with its auto-reset)."""
    env = navix.make(env_id, max_steps=max_steps)
    timestep = env.reset(jax.random.key(key))
    step = jax.jit(env.step)
    out = [timestep]
    for action in actions:
        timestep = step(timestep, jnp.int32(action))
        out.append(timestep)
    return out


def test_episodes_match_navix_own_step():
    # max_steps 5: the goal is reached on the time limit's step (terminated, not truncated);
    # the spin is cut by the time limit.
    actions = TO_GOAL + [2] + SPIN + [2]
    env = envs.make_env(f"navix:{EMPTY}", {"max_steps": 5})
    steps = step_through(env, actions)
    own = _own_steps(EMPTY, actions, max_steps=5)
    for i, (s, before, after) in enumerate(zip(steps, own, own[1:])):
        np.testing.assert_array_equal(s.obs, np.asarray(after.observation, np.float32))
        assert s.obs.dtype == np.float32 and s.reward.dtype == np.float32
        assert float(s.reward) == float(after.reward), i
        assert bool(s.terminated) == bool(after.step_type == 2), i
        assert bool(s.truncated) == bool(after.step_type == 1), i
        assert bool(s.valid) == bool(before.step_type == 0), i  # navix resets after an end
    rows = [(float(s.reward), bool(s.terminated), bool(s.truncated), bool(s.valid))
            for s in steps]
    assert rows[4] == (1.0, True, False, True)     # the goal, on the time limit's step
    assert rows[5] == (0.0, False, False, False)   # reset step: the action (forward) ignored
    assert rows[10] == (0.0, False, True, True)    # the time limit cuts the spin
    assert rows[11] == (0.0, False, False, False)  # reset step
    first = np.asarray(own[0].observation, np.float32)
    np.testing.assert_array_equal(steps[5].obs, first)
    np.testing.assert_array_equal(steps[11].obs, first)
    assert not np.array_equal(steps[4].obs, first)  # the real final observation
    # The true return: navix's own running return at the terminal step.
    assert sum(r for r, *_ in rows[:5]) == float(own[5].info["return"]) == 1.0


def test_spaces_and_options():
    env = envs.make_env(f"navix:{EMPTY}")
    assert str(env.action_space) == "Discrete(7)"
    space = env.observation_space
    assert space.shape == (5, 5, 3) and space.dtype == np.float32
    assert env.raw.env.max_steps == navix_suite.DEFAULT_MAX_STEPS == 100
    obs = np.asarray(env.reset(jax.random.key(0)).obs)
    assert obs.dtype == np.float32 and space.contains(obs)
    first_person = envs.make_env(f"navix:{EMPTY}", {"observation": "symbolic_first_person"})
    assert first_person.observation_space.shape == (7, 7, 3)
    assert envs.make_env(f"navix:{EMPTY}", {"observation": "rgb"}).observation_space.shape \
        == (40, 40, 3)


def test_env_ids_are_the_installed_registry():
    assert set(navix_suite.ENV_IDS) == set(navix.registry())


def test_unknown_id_and_options_name_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown navix env 'Navix-Nope-v0'.*Navix-Empty-5x5"):
        envs.make_env("navix:Navix-Nope-v0")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['max_step'\].*max_steps"):
        envs.make_env(f"navix:{EMPTY}", {"max_step": 5})
    with pytest.raises(ValueError, match="observation='pixels'.*symbolic"):
        envs.make_env(f"navix:{EMPTY}", {"observation": "pixels"})
    with pytest.raises(ValueError, match="max_steps=0"):
        envs.make_env(f"navix:{EMPTY}", {"max_steps": 0})


def test_a_step_keeps_the_state_types():
    """The suite's weakly typed constants come back strong (no second compilation)."""
    assert_step_keeps_state_types(envs.make_env(f"navix:{EMPTY}"),
                                  jax.ShapeDtypeStruct((), jnp.int32))


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_few_updates(tmp_path, runtime):
    few_updates(tmp_path, f"navix:{EMPTY}", runtime)
