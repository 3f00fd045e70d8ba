"""anakin/suites/jumanji_suite.py: jumanji envs ("jumanji:<id>") as `RawEnv`s under `AutoReset`.

Every real step is replayed with jumanji's own `step` from the same jumanji state. Hand-picked
episodes: Snake (6x6, time limit 8) running up into the wall (a termination), then taking safe
moves until its time limit, which jumanji itself reports as a termination (discount 0) and the
adapter as a truncation; Game2048 (2x2 board, no time limit of its own) played to its end (the
true return is jumanji's own score), then stalled on a no-op move until the adapter's
`max_steps`. The reset step after each end is checked.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("jumanji", reason="the jumanji extra is not installed: "
                                      "pip install -r requirements-jumanji.txt")

from anakin import envs  # noqa: E402
from anakin.suites import jumanji_suite  # noqa: E402
from tests.anakin.suites.common import few_updates  # noqa: E402

SNAKE = {"num_rows": 6, "num_cols": 6, "time_limit": 8}
UP = 0  # the action both Snake and Game2048 read as "up"


def _play(env, policies, num_steps, key=0):
    """(Step, jumanji's own TimeStep for that step or None on a reset step) for `num_steps`
    steps of `env` (and the state after it); episode k acts by policy
    policies[min(k, len(policies) - 1)](obs, rng)."""
    state = env.reset(jax.random.key(key))
    step, own_step = jax.jit(env.step), jax.jit(env.raw.env.step)
    rng, episode, rows = np.random.default_rng(0), 0, []
    for i in range(num_steps):
        action = jnp.int32(policies[min(episode, len(policies) - 1)](state.obs, rng))
        own = None if bool(state.done) else own_step(state.inner.inner, action)
        state, s = step(jax.random.key(1000 + i), state, action)
        rows.append((jax.device_get(s), jax.device_get(own), jax.device_get(state)))
        episode += bool(s.episode_over)
    return rows


def _legal(obs, rng):
    """A uniformly random action among those the observation's action mask allows."""
    return rng.choice(np.flatnonzero(obs["action_mask"]))


def _check_replay(rows, fields):
    """Each real step's observation fields and reward are jumanji's own; reset steps are
    reset steps (reward 0, not ended, invalid)."""
    for i, (s, own, _) in enumerate(rows):
        assert s.reward.dtype == np.float32 and s.terminated.dtype == bool
        if own is None:
            assert (float(s.reward), bool(s.terminated), bool(s.truncated), bool(s.valid)) \
                == (0.0, False, False, False), i
            continue
        _, ts = own
        assert bool(s.valid) and float(s.reward) == float(ts.reward), i
        assert s.info["extras"].keys() == (ts.extras or {}).keys(), i  # info: jumanji's extras
        for key, value in (ts.extras or {}).items():
            np.testing.assert_array_equal(s.info["extras"][key], value, err_msg=f"step {i}")
        # jumanji's end is an end; a termination is one of jumanji's (discount 0), and only
        # the adapter's `max_steps` may end an episode jumanji goes on with.
        assert bool(s.episode_over) >= bool(ts.last()), i
        assert bool(s.terminated) <= (bool(ts.last()) and float(ts.discount) == 0.0), i
        for name in fields:
            np.testing.assert_array_equal(
                s.obs[name], np.asarray(getattr(ts.observation, name), np.float32).reshape(
                    s.obs[name].shape), err_msg=f"step {i} {name}")


def test_snake_termination_and_time_limit_against_jumanji_step():
    env = envs.make_env("jumanji:Snake-v1", SNAKE)
    # Episode 1 runs up into the wall (at most 6 rows: before the limit of 8); episode 2
    # takes the first safe move each step, so only the time limit ends it.
    rows = _play(env, [lambda obs, rng: UP, lambda obs, rng: np.argmax(obs["action_mask"])],
                 16)
    _check_replay(rows, ("grid", "step_count", "action_mask"))
    ends = [i for i, (s, *_) in enumerate(rows) if s.episode_over]
    assert len(ends) == 2 and ends[0] < 6, ends
    died, _, _ = rows[ends[0]]
    assert bool(died.terminated) and not bool(died.truncated)
    assert float(rows[ends[0]][1][1].discount) == 0.0
    cut, (_, own_cut), _ = rows[ends[1]]
    # jumanji reports its time limit as a termination (discount 0); the adapter as truncated.
    assert ends[1] - ends[0] == 1 + SNAKE["time_limit"]
    assert bool(own_cut.last()) and float(own_cut.discount) == 0.0
    assert bool(cut.truncated) and not bool(cut.terminated)
    assert float(cut.obs["step_count"][0]) == SNAKE["time_limit"]  # the real final obs
    for end in ends:  # the reset step: a new snake of length 1, at step 0
        s, own, _ = rows[end + 1]
        assert own is None and not bool(s.valid)
        assert float(s.obs["step_count"][0]) == 0.0 and s.obs["grid"][..., 0].sum() == 1.0


def test_game2048_true_return_and_max_steps_against_jumanji_step():
    # A 2x2 board fills up in a few moves; "up" alone stalls once nothing moves up (jumanji
    # then leaves the board as it is), so only `max_steps` ends episode 2.
    env = envs.make_env("jumanji:Game2048-v1", {"board_size": 2, "max_steps": 20})
    assert envs.info_fields(env) == ("extras.highest_tile",)  # env.episode_metrics can name
    rows = _play(env, [_legal, lambda obs, rng: UP], 40)
    _check_replay(rows, ("board", "action_mask"))
    ends = [i for i, (s, *_) in enumerate(rows) if s.episode_over]
    assert len(ends) >= 2 and ends[0] < 20, ends
    over, _, state = rows[ends[0]]
    assert bool(over.terminated) and not bool(over.truncated)
    # The true return: the episode's rewards sum to jumanji's own score.
    ret = sum(float(s.reward) for s, *_ in rows[:ends[0] + 1])
    assert ret == float(state.inner.inner.score) > 0
    assert ends[1] - ends[0] == 1 + 20
    cut, _, _ = rows[ends[1]]
    assert bool(cut.truncated) and not bool(cut.terminated)
    s, own, _ = rows[ends[0] + 1]
    assert own is None and not bool(s.valid) and np.count_nonzero(s.obs["board"]) == 1


def test_spaces():
    env = envs.make_env("jumanji:Snake-v1", SNAKE)
    assert str(env.action_space) == "Discrete(4)"
    space = env.observation_space
    assert {k: v.shape for k, v in space.spaces.items()} == {
        "grid": (6, 6, 5), "step_count": (1,), "action_mask": (4,)}
    assert all(v.dtype == np.float32 for v in space.spaces.values())
    obs = jax.device_get(env.reset(jax.random.key(0)).obs)
    assert space.contains({k: np.asarray(v) for k, v in obs.items()})
    # Nested observation fields get dotted keys; unbounded integer fields +-inf bounds.
    maze = envs.make_env("jumanji:Maze-v0")
    spaces = maze.observation_space.spaces
    assert spaces["agent_position.row"].shape == (1,) and spaces["walls"].shape == (10, 10)
    assert spaces["step_count"].high[0] == np.inf
    assert maze.raw.time_limit == 100 and maze.raw.max_steps is None
    # Actions of several discrete parts: MultiDiscrete.
    tetris = envs.make_env("jumanji:Tetris-v0", {"num_rows": 6, "num_cols": 6})
    assert tetris.action_space.nvec.tolist() == [4, 6]
    assert envs.make_env("jumanji:Game2048-v1").raw.max_steps \
        == jumanji_suite.DEFAULT_MAX_STEPS


def test_unknown_ids_options_and_unsupported_envs_are_named():
    with pytest.raises(ValueError, match="unknown jumanji env 'Snake-v9'.*Snake-v1"):
        envs.make_env("jumanji:Snake-v9")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['rows'\].*max_steps.*num_rows"):
        envs.make_env("jumanji:Snake-v1", {"rows": 6})
    with pytest.raises(ValueError, match="max_steps=0"):
        envs.make_env("jumanji:Game2048-v1", {"max_steps": 0})
    with pytest.raises(ValueError, match="one reward per agent"):
        envs.make_env("jumanji:LevelBasedForaging-v0")


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_few_updates(tmp_path, runtime):
    # A trapped snake has no legal move and the game goes on: an empty mask is its rule.
    few_updates(tmp_path, "jumanji:Snake-v1", runtime, **{"env.action_mask_empty": "allow"},
                **{f"env.options.{k}": v for k, v in SNAKE.items()})


@pytest.mark.parametrize("agent_name,mask_key", [("ppo", "auto"), ("ppo", ""),
                                                ("impala", "auto")])
def test_the_masked_policy_plays_legal_moves_only(agent_name, mask_key):
    """Game2048 forbids the moves that change nothing (its `action_mask`). With the mask found
    (env.action_mask_key auto) the agent's sampled moves over a rollout, and its greedy
    moves, are all legal, for PPO and IMPALA; without it (""), the same untrained policy plays
    illegal ones, so the check can fail. Observation normalisation on: the mask must reach
    the head as 0/1."""
    from anakin import actor, key_streams
    from experiments import wiring
    from experiments.configs import impala_classic, ppo_gymnax
    env = envs.make_env("jumanji:Game2048-v1")
    config = (ppo_gymnax if agent_name == "ppo" else impala_classic).get_config()
    config.env.name, config.env.action_mask_key = "jumanji:Game2048-v1", mask_key
    config.agent.obs_norm = True
    _, network, agent = wiring.build_from_config(
        config, env.action_space, num_updates=1, observation_space=env.observation_space)
    assert network.action_mask_key == ("action_mask" if mask_key else "")
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    state = agent.init(jax.random.key(0), example)
    runner = actor.init_runner(agent, env, key_streams.runner_key(0), 16)
    _, ro, _ = jax.jit(lambda p, r: actor.rollout(agent, env, p, r, 64))(
        agent.actor_params(state), runner)
    masks, actions, valid = (np.asarray(x) for x in (ro.obs["action_mask"][:-1], ro.action,
                                                     ro.valid))
    legal = np.take_along_axis(masks, actions[..., None], -1)[..., 0] > 0
    assert valid.sum() > 500
    if mask_key:
        assert legal[valid].all(), np.argwhere(valid & ~legal)[:5]
    else:
        assert (~legal[valid]).sum() > 20
    greedy = np.asarray(jax.jit(agent.greedy_step)(
        agent.actor_params(state), jax.tree.map(lambda x: x[0], ro.obs)))
    playable = masks[0].any(-1)
    chosen = masks[0][np.arange(16), greedy] > 0
    if mask_key:
        assert chosen[playable].all()
