"""Pgx (JAX board games and MinAtar) as `RawEnv`s: names "pgx:<id>" with <id> one of
`pgx.available_envs()` ("pgx:2048", "pgx:tic_tac_toe", "pgx:connect_four", "pgx:othello",
"pgx:minatar-breakout", ...).

Checked with pgx 2.6.0 on jax 0.10.2. The suite's conventions and how they are mapped:

- No auto-reset: `env.init(key) -> state`, `env.step(state, action, key) -> state`; the state
  carries `current_player`, `observation` (the current player's view), `rewards` (one per
  player), `terminated`, `truncated` and `legal_action_mask`. Stepping a finished state only
  zeroes its rewards, so the adapter steps pgx directly and `AutoReset` resets one step late.
  The step's key is passed on (2048, backgammon and MinAtar draw from it).
- Time limits: pgx never sets `truncated` (its games end by their rules; Go, chess etc. end
  after a fixed number of moves as a rule, reported as terminated, and kept so). Some MinAtar
  games need not end at all: the adapter's option `max_steps` (default 10_000, counted in the
  agent's moves) ends an episode with truncated=True. pgx's own `truncated`, should a version
  set it, is reported as truncated too, and ends the opponents' replies (on their turn too).
- Players: single-player ids ("2048", "minatar-*") map directly. In a game of N >= 2 players
  the agent plays one seat against a fixed opponent policy inside `transition`: the agent's
  move, then the other players' moves until it is the agent's turn again or the game ends.
  Option `opponent`: "random" (the only one: uniformly random legal moves). Option
  `agent_player`: the agent's seat in move order (0 moves first, 1 second, ...) or "random"
  (default: a seat drawn uniformly per episode at reset). If the agent is not first, `reset`
  plays the opponents' opening moves. Games where a player moves several times in a row
  (backgammon) are handled by the same rule (the opponents move while it is not the agent's
  turn).
- Reward: the agent's entry of `rewards`, summed over its own move and the opponents' replies
  (board games pay +1 / -1 / 0 at the end).
- Illegal moves: pgx's own rule is kept: an illegal move (by the agent; the random opponent
  makes none) ends the game at once with reward -1 to the mover (+1 to the others); in 2048 a
  move that changes nothing is illegal (game over, -1). The observation carries pgx's
  `legal_action_mask`, which masks the policy by default (env.action_mask_key "auto": the
  agent then makes no illegal move); with the key "" the policy must learn the legal moves.
- Info (episode metrics, env.episode_metrics): `illegal_move` (1 on the step whose move was
  illegal: `illegal_move:max` is the illegal-move rate per game) and, in games of several
  players, `won` (1 on a final step whose reward to the agent is positive: `won:max` is the
  win rate).
- Observation: a Dict of two float32 Boxes: "observation", pgx's observation array of the
  agent's view (also on the final step, when pgx's own `observation` is the next player's
  view: the adapter calls pgx's `_observe(state, agent)`, what `observe` calls, because
  `observe`'s player_id argument is deprecated in 2.6), cast to float32 (bool planes -> 0/1):
  [H, W, C] for the board games and MinAtar (conv torsos take it), [D] for backgammon / poker,
  bounds [0, 1] for bool observations, +-inf otherwise; and "legal_action_mask" [num_actions]
  (0/1), the agent's legal moves. Action space: Discrete(num_actions).

Importing pgx builds jax arrays (its State defaults), which starts JAX's backend, as importing
gymnax does; the runtime makes the env after a multi-host join. The spaces are derived from
`jax.eval_shape` of `init` on first use (no game is played to build them).
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from anakin.suites import refuse_unknown_options

OPPONENTS = ("random",)
OPTIONS = ("agent_player", "max_steps", "opponent")
DEFAULT_MAX_STEPS = 10_000


class PgxState(NamedTuple):
    """pgx's state, the agent's player id and the agent's moves since reset."""

    inner: Any
    agent: jax.Array
    t: jax.Array


class PgxEnv:
    """A pgx game as a `RawEnv`, the agent against random opponents in games of several
    players (the module docstring has the mapping)."""

    def __init__(self, env_id: str, options: dict) -> None:
        import pgx
        ids = pgx.available_envs()
        if env_id not in ids:
            raise ValueError(f"unknown pgx env {env_id!r}; available: {', '.join(ids)}.")
        refuse_unknown_options(f"pgx:{env_id}", options, OPTIONS)
        self.env, self.env_id = pgx.make(env_id), env_id
        self.num_players = int(self.env.num_players)
        self.opponent = options.get("opponent", "random")
        if self.opponent not in OPPONENTS:
            raise ValueError(f"pgx:{env_id}: opponent={self.opponent!r}; allowed: "
                             f"{list(OPPONENTS)}.")
        seat = options.get("agent_player", "random")
        seats = ["random", *range(self.num_players)]
        if isinstance(seat, bool) or seat not in seats:
            raise ValueError(f"pgx:{env_id}: agent_player={seat!r}; allowed: {seats} (the "
                             f"agent's seat in move order).")
        self.agent_player = seat
        self.max_steps = options.get("max_steps", DEFAULT_MAX_STEPS)
        if not isinstance(self.max_steps, (int, np.integer)) or self.max_steps < 1:
            raise ValueError(f"pgx:{env_id}: max_steps={self.max_steps!r} must be a positive "
                             f"integer.")

    @functools.cached_property
    def _shapes(self):
        return jax.eval_shape(self.env.init, jax.random.key(0))

    @property
    def action_space(self):
        """Discrete(the game's number of actions)."""
        from gymnasium import spaces
        return spaces.Discrete(int(self._shapes.legal_action_mask.shape[0]))

    @property
    def observation_space(self):
        """A Dict of float32 Boxes: pgx's observation and the legal-action mask."""
        from gymnasium import spaces
        obs = self._shapes.observation
        low, high = (0.0, 1.0) if obs.dtype == jnp.bool_ else (-np.inf, np.inf)
        mask = self._shapes.legal_action_mask
        return spaces.Dict({"observation": spaces.Box(low, high, tuple(obs.shape), np.float32),
                            "legal_action_mask": spaces.Box(0.0, 1.0, tuple(mask.shape),
                                                            np.float32)})

    def _observe(self, state, agent):
        if self.num_players == 1:
            board = state.observation.astype(jnp.float32)
        else:
            board = self.env._observe(state, agent).astype(jnp.float32)
        return {"observation": board,
                "legal_action_mask": state.legal_action_mask.astype(jnp.float32)}

    def _opponents(self, key, state, agent):
        """The other players' random legal moves until it is `agent`'s turn or the game is
        over (terminated or truncated: pgx steps a finished state into itself, so the turn
        would never come back); (state, the agent's reward summed over them)."""
        if self.num_players == 1:
            return state, jnp.zeros((), jnp.float32)

        def pending(carry):
            state, _, _ = carry
            return ~state.terminated & ~state.truncated & (state.current_player != agent)

        def move(carry):
            state, reward, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            state = self.env.step(state, jax.random.categorical(k_act, logits), k_step)
            return state, reward + state.rewards[agent], key

        state, reward, _ = jax.lax.while_loop(
            pending, move, (state, jnp.zeros((), jnp.float32), key))
        return state, reward

    def reset(self, key):
        """A new game, its opening played up to the agent's first turn."""
        k_init, k_seat, k_opp = jax.random.split(key, 3)
        state = self.env.init(k_init)
        if self.agent_player == "random":
            seat = jax.random.randint(k_seat, (), 0, self.num_players)
        else:
            seat = jnp.int32(self.agent_player)
        # pgx's current_player at init is the player id that moves first.
        agent = ((state.current_player + seat) % self.num_players).astype(jnp.int32)
        state, _ = self._opponents(k_opp, state, agent)
        return PgxState(state, agent, jnp.zeros((), jnp.int32)), self._observe(state, agent)

    def transition(self, key, state, action):
        """The agent's move and the opponents' replies, one step for the agent."""
        k_move, k_opp = jax.random.split(key)
        agent = state.agent
        action = jnp.asarray(action, jnp.int32)
        illegal = ~state.inner.legal_action_mask[action]
        inner = self.env.step(state.inner, action, k_move)
        reward = inner.rewards[agent]
        inner, replies = self._opponents(k_opp, inner, agent)
        t = state.t + 1
        terminated = inner.terminated
        truncated = ~terminated & (inner.truncated | (t >= self.max_steps))
        info = {"illegal_move": illegal.astype(jnp.float32)}
        if self.num_players > 1:
            info["won"] = (terminated & (inner.rewards[agent] > 0)).astype(jnp.float32)
        return (PgxState(inner, agent, t), self._observe(inner, agent),
                (reward + replies).astype(jnp.float32), terminated, truncated, info)


def make(env_id: str, options: dict) -> PgxEnv:
    """The `RawEnv` of pgx's `env_id`; `options`: opponent, agent_player, max_steps (module
    docstring). ValueError naming an unknown id or option."""
    return PgxEnv(env_id, dict(options))
