"""anakin/suites/pgx_suite.py: pgx games ("pgx:<id>") as `RawEnv`s under `AutoReset`.

Every real step is replayed with pgx's own `step` from the same pgx state: in tic-tac-toe the
adapter's next state must be pgx's step of the agent's move followed by exactly one legal
opponent move (or the agent's move alone when it ended the game), with the agent's rewards of
both; in 2048 (single player) the reward must be pgx's own. Hand-picked episodes: tic-tac-toe
games played to their end and an illegal move (pgx ends the game, -1), cut by `max_steps`;
2048 played to its end and ended by an illegal move. The reset step after each end is checked.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pgx", reason="the pgx extra is not installed: "
                                  "pip install -r requirements-pgx.txt")

from anakin import envs  # noqa: E402
from anakin.suites import pgx_suite  # noqa: E402
from tests.anakin.suites.common import few_updates  # noqa: E402


def _same(a, b) -> bool:
    """Whether two pgx states are equal leaf by leaf."""
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _first_legal(state, rng):
    return int(np.argmax(state.inner.inner.legal_action_mask))


def _random_legal(state, rng):
    return int(rng.choice(np.flatnonzero(state.inner.inner.legal_action_mask)))


def _play(env, policies, num_steps, key=0, episodes=None):
    """(Step, state before, state after, action) for `num_steps` steps of `env` (or until the
    reset step after the end of `episodes` episodes); episode k acts by
    policies[min(k, len(policies) - 1)](state, rng)."""
    state = env.reset(jax.random.key(key))
    step = jax.jit(env.step)
    rng, episode, rows = np.random.default_rng(0), 0, []
    for i in range(num_steps):
        before = jax.device_get(state)
        action = policies[min(episode, len(policies) - 1)](before, rng)
        state, s = step(jax.random.key(1000 + i), state, jnp.int32(action))
        rows.append((jax.device_get(s), before, jax.device_get(state), int(action)))
        if episodes is not None and episode == episodes:
            break
        episode += bool(s.episode_over)
    return rows


def _check_tic_tac_toe_replay(env, rows):
    """The adapter's step is pgx's: the agent's move, then one legal opponent move unless the
    agent's move ended the game; the reward is the agent's over both; reset steps reset."""
    own = jax.jit(env.raw.env.step)
    key = jax.random.key(0)  # tic-tac-toe draws nothing
    for i, (s, before, after, action) in enumerate(rows):
        assert s.reward.dtype == np.float32 and s.obs["observation"].dtype == np.float32
        if bool(before.done):
            assert (float(s.reward), bool(s.episode_over), bool(s.valid)) == (0.0, False, False)
            continue
        agent = int(before.inner.agent)
        mine = jax.device_get(own(before.inner.inner, jnp.int32(action), key))
        if bool(mine.terminated):
            assert _same(after.inner.inner, mine), i
            assert float(s.reward) == float(mine.rewards[agent]), i
        else:
            replies = [jax.device_get(own(mine, jnp.int32(b), key))
                       for b in np.flatnonzero(mine.legal_action_mask)]
            match = [r for r in replies if _same(after.inner.inner, r)]
            assert len(match) == 1, i
            assert float(s.reward) == float(mine.rewards[agent] + match[0].rewards[agent]), i
        assert bool(s.terminated) == bool(after.inner.inner.terminated), i
        if not bool(s.episode_over):  # the agent's turn: pgx's own view is the agent's
            assert int(after.inner.inner.current_player) == agent
            np.testing.assert_array_equal(s.obs["observation"], after.inner.inner.observation)
            np.testing.assert_array_equal(s.obs["legal_action_mask"],
                                          after.inner.inner.legal_action_mask)
        # info: the agent's move was illegal (it was not in the mask it saw), the game won.
        assert float(s.info["illegal_move"]) == float(
            not before.inner.inner.legal_action_mask[action]), i
        assert float(s.info["won"]) == float(bool(s.terminated) and float(s.reward) > 0), i


def test_tic_tac_toe_against_pgx_step():
    # The agent moves second: a first-legal-cell game against the random opponent, then an
    # illegal move (onto the opponent's opening piece), then first-legal games again.
    env = envs.make_env("pgx:tic_tac_toe", {"agent_player": 1})

    def onto_opponent(state, rng):
        return int(np.argmax(state.obs["observation"][..., 1]))
    rows = _play(env, [_first_legal, onto_opponent, _first_legal], 24)
    _check_tic_tac_toe_replay(env, rows)
    ends = [i for i, (s, *_) in enumerate(rows[:-1]) if s.episode_over]
    # Games lost, one won on the agent's own move (pgx's view is then the opponent's).
    assert len(ends) >= 4 and {float(rows[e][0].reward) for e in ends} == {-1.0, 1.0}, ends
    start = 0
    for k, end in enumerate(ends):
        s, _, after, _ = rows[end]
        assert bool(s.terminated) and not bool(s.truncated)
        ret = sum(float(r[0].reward) for r in rows[start:end + 1])
        # The true return: pgx pays the agent +1 / 0 / -1 at the end, nothing before.
        assert ret == float(s.reward) in (-1.0, 0.0, 1.0)
        if k == 1:  # the illegal move: the game is over at once, lost
            assert (ret, end) == (-1.0, start)
        else:  # the final view is the agent's: its plane holds exactly the agent's moves
            played = {r[3] for r in rows[start:end + 1]}
            mine = set(np.flatnonzero(s.obs["observation"][..., 0]))
            assert mine == played and len(played) == end - start + 1
        reset, *_ = rows[end + 1]
        assert not bool(reset.valid) and float(reset.reward) == 0.0
        # A new game, the opponent's opening move made: one piece, not the agent's.
        assert (reset.obs["observation"][..., 0].sum(),
                reset.obs["observation"][..., 1].sum()) == (0.0, 1.0)
        start = end + 2


def test_tic_tac_toe_max_steps_truncates():
    # The agent moves first; no game can end by its second move: max_steps 2 cuts each game.
    env = envs.make_env("pgx:tic_tac_toe", {"agent_player": 0, "max_steps": 2})
    rows = _play(env, [_first_legal], 6)
    _check_tic_tac_toe_replay(env, rows)
    flags = [(bool(s.terminated), bool(s.truncated), bool(s.valid)) for s, *_ in rows]
    assert flags == [(False, False, True), (False, True, True), (False, False, False)] * 2
    cut, reset = rows[1][0], rows[2][0]
    board = cut.obs["observation"]
    assert (board[..., 0].sum(), board[..., 1].sum()) == (2.0, 2.0)  # the real final obs
    assert reset.obs["observation"].sum() == 0.0  # a new game, the agent to open it


def test_2048_rewards_and_ends_against_pgx_step():
    # Random legal moves until the board is stuck (pgx: terminated), then "left" (action 0)
    # until it is illegal (pgx: game over with -1).
    env = envs.make_env("pgx:2048")
    rows = _play(env, [_random_legal, lambda state, rng: 0], 1000, episodes=2)
    own = jax.jit(env.raw.env.step)
    ends = [i for i, (s, *_) in enumerate(rows) if s.episode_over]
    assert len(ends) >= 2, ends
    assert len(rows) == ends[1] + 2
    for i, (s, before, after, action) in enumerate(rows):
        if bool(before.done):
            assert (float(s.reward), bool(s.episode_over), bool(s.valid)) == (0.0, False, False)
            assert (s.obs["observation"][..., 0] == 0).sum() == 2  # a fresh board: two tiles
            continue
        # The merges (the reward) do not depend on the key (only the new tile's place does,
        # and with it whether the board is stuck).
        mine = own(before.inner.inner, jnp.int32(action), jax.random.key(i))
        assert float(s.reward) == float(mine.rewards[0]), i
        assert bool(s.terminated) == bool(after.inner.inner.terminated), i
        assert not bool(s.truncated), i
        np.testing.assert_array_equal(s.obs["observation"], after.inner.inner.observation)
        np.testing.assert_array_equal(s.obs["legal_action_mask"],
                                      after.inner.inner.legal_action_mask)
    first = [float(s.reward) for s, *_ in rows[:ends[0] + 1]]
    assert sum(first) > 0 and first[-1] >= 0  # stuck: the last move was legal
    assert float(rows[ends[1]][0].reward) == -1.0  # the illegal "left"


def test_seats_and_spaces():
    env = envs.make_env("pgx:tic_tac_toe")
    assert str(env.action_space) == "Discrete(9)"
    space = env.observation_space["observation"]
    assert space.shape == (3, 3, 2) and space.dtype == np.float32 and space.high.max() == 1.0
    assert env.observation_space["legal_action_mask"].shape == (9,)
    # The default seat is drawn per episode: the agent opens about half of the games.
    states = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 64))
    assert env.observation_space.contains(jax.tree.map(lambda x: np.asarray(x[0]), states.obs))
    opened = int((np.asarray(states.obs["observation"]).sum(axis=(1, 2, 3)) == 0).sum())
    assert 16 < opened < 48, opened
    assert np.array_equal(np.asarray(states.inner.inner.current_player),
                          np.asarray(states.inner.agent))
    game = envs.make_env("pgx:2048")
    assert game.observation_space["observation"].shape == (4, 4, 31)
    assert str(game.action_space) == "Discrete(4)"
    assert game.raw.max_steps == pgx_suite.DEFAULT_MAX_STEPS


def test_unknown_ids_and_options_are_named():
    with pytest.raises(ValueError, match="unknown pgx env 'tictactoe'.*tic_tac_toe"):
        envs.make_env("pgx:tictactoe")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['seat'\].*agent_player"):
        envs.make_env("pgx:tic_tac_toe", {"seat": 0})
    with pytest.raises(ValueError, match=r"agent_player=2.*\['random', 0, 1\]"):
        envs.make_env("pgx:tic_tac_toe", {"agent_player": 2})
    with pytest.raises(ValueError, match=r"opponent='greedy'.*\['random'\]"):
        envs.make_env("pgx:tic_tac_toe", {"opponent": "greedy"})
    with pytest.raises(ValueError, match="max_steps=0"):
        envs.make_env("pgx:2048", {"max_steps": 0})


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_few_updates(tmp_path, runtime):
    few_updates(tmp_path, "pgx:tic_tac_toe", runtime)


class _Game(NamedTuple):
    """The fields of a pgx state the opponents' loop reads, and a move counter."""

    current_player: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    rewards: jax.Array
    legal_action_mask: jax.Array
    moves: jax.Array


class _TruncatedOnTheOpponentsTurn:
    """A two-player game that every move truncates on the opponent's turn. pgx steps a finished
    state into itself (its rewards zeroed), so the turn never comes back to the agent; a
    safety valve terminates the game after 50 moves, so a loop that waits for the agent's turn
    or a termination ends (with 50 moves, failing the test) instead of hanging."""

    def step(self, state, action, key):
        moves = state.moves + 1
        return state._replace(truncated=jnp.bool_(True), terminated=moves >= 50,
                              rewards=jnp.zeros(2), moves=moves)


def test_the_opponents_stop_at_a_truncation():
    env = pgx_suite.PgxEnv("tic_tac_toe", {})
    env.env = _TruncatedOnTheOpponentsTurn()
    opponents_turn = _Game(jnp.int32(1), jnp.bool_(False), jnp.bool_(False), jnp.zeros(2),
                           jnp.ones(9, bool), jnp.int32(0))
    after, _ = jax.jit(lambda s: env._opponents(jax.random.key(0), s, jnp.int32(0)))(
        opponents_turn)
    assert int(after.moves) == 1, "the opponents moved on after the game was truncated"
    assert bool(after.truncated) and not bool(after.terminated)
