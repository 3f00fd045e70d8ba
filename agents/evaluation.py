"""Evaluation players for scripts and the in-training evaluation: greedy or sampled play.

An `EvalActor` plays a batch of envs with EnvPool's autoreset, feed-forward or recurrent alike.
`eval_player(kind, ...)` picks the player of a kind in `EVAL_POLICIES` and checks it against the
agent before any game is played:
- "sample" runs any agent's own `actor_step`;
- "greedy" takes the mode of the action distribution: with the agent's own `greedy_step` when
  its builder set one (IMPALA and PPO do, with `make_greedy_step` on the network they were built
  with, so an agent that builds its own network plays that network), otherwise with the network
  `config.network` describes, which must then fit the agent's `ActorParams` (traced up front:
  an agent with another network is refused with one clear error, not a flax traceback).
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents.acting import ActorParams, actor_obs, step_network
from agents.unroll import zero_state_where
from networks import is_recurrent
from podracer.agent import reset_core_state

EVAL_POLICIES = ("greedy", "sample")


class EvalPolicyError(ValueError):
    """An evaluation policy that cannot play this agent (a user's choice: sample instead)."""


def _mode(network: nn.Module, ap: ActorParams, obs, core_state):
    """(mode of the action distribution, new core state); the state is already reset."""
    (policy, _), core_state = step_network(network, ap.params, actor_obs(ap, obs), core_state)
    return network.dist.mode(policy), core_state


def greedy_step(network: nn.Module, ap: ActorParams, obs, core_state, reset
                ) -> tuple[Any, Any]:
    """Evaluation policy: (mode of the action distribution, new core state) for a batch of
    raw observations [B, ...]; obs normalisation as the actors do when `ap.obs_norm` is set.

    Recurrent networks: `core_state` starts as `network.initial_state(B)`; `reset` [B] marks
    the envs whose new episode's first observation this is (True on the first call, then
    True exactly where the previous step was an env reset step). Feed-forward: pass None for
    both; the returned state is None. Jit it with `network` static (e.g.
    `jax.jit(functools.partial(greedy_step, network))`).
    """
    if core_state is not None:
        core_state = zero_state_where(network, core_state, reset)
    return _mode(network, ap, obs, core_state)


def make_greedy_step(network: nn.Module) -> Callable:
    """`Agent.greedy_step` for an actor-critic `network` whose agent ships `ActorParams` (the
    IMPALA and PPO builders set it with the network they were given): `greedy_step(ap, obs) ->
    action`, or for recurrent networks `greedy_step(ap, obs, core_state) -> (action,
    core_state)` with the state already reset where an episode starts, as for `actor_step`."""
    if is_recurrent(network):
        return lambda ap, obs, core_state: _mode(network, ap, obs, core_state)
    return lambda ap, obs: _mode(network, ap, obs, None)[0]


class EvalActor:
    """A stateful policy over a batch of envs with EnvPool's autoreset, for scripts (evaluate,
    render); feed-forward or recurrent alike:

        actor = eval_player("greedy", network, agent, ap, obs).actor(ap, num_envs)
        obs = env.reset()
        while ...:
            ts = env.step(actor.act(obs, key))
            actor.observe(ts.terminated, ts.truncated)
            obs = ts.obs

    `step(obs, key, core_state, reset) -> (action, core_state)` is the policy (jitted here);
    `initial_state(num_envs)` the core's zero state, None for feed-forward networks. The core
    state is reset exactly as the training actors do (sebulba/actor.py): on the first step, and
    on the step after each reset step (the step after one that ended an episode).
    """

    def __init__(self, step, num_envs: int, initial_state=None) -> None:
        self._step = jax.jit(step)
        self._state = initial_state(num_envs) if initial_state is not None else None
        self._reset = jnp.ones(num_envs, bool)
        self._prev_done = jnp.zeros(num_envs, bool)

    def act(self, obs, key: jax.Array) -> Any:
        """Actions (host arrays; a dict/tuple for mixed spaces) for a batch of observations."""
        action, self._state = self._step(obs, key, self._state,
                                         self._reset if self._state is not None else None)
        return jax.device_get(action)

    def observe(self, terminated, truncated) -> None:
        """The env's answer to the last action: sets the resets of the next step."""
        self._reset = self._prev_done
        self._prev_done = jnp.logical_or(jnp.asarray(terminated), jnp.asarray(truncated))


class Player(NamedTuple):
    """An evaluation policy, pure: `step(actor_params, obs, key, core_state, reset) -> (action,
    core_state)` (state and reset None for feed-forward policies; `reset` [B] marks the envs
    whose new episode starts at `obs`) and `initial_state(num_envs)` (None: feed-forward)."""

    step: Callable
    initial_state: Callable[[int], Any] | None

    def actor(self, actor_params: Any, num_envs: int) -> EvalActor:
        """A stateful player of these actor params for a batch of `num_envs` envs."""
        return EvalActor(functools.partial(self.step, actor_params), num_envs,
                         self.initial_state)


def network_player(network: nn.Module) -> Player:
    """Greedy play of `network` on `ActorParams` (`greedy_step`)."""
    return Player(lambda ap, obs, key, state, reset:
                  greedy_step(network, ap, obs, state, reset),
                  network.initial_state if is_recurrent(network) else None)


def agent_player(agent, greedy: bool) -> Player:
    """A sebulba Agent's own policy, with the runtime's signatures (podracer/agent.py): its
    `greedy_step` (greedy) or `actor_step` (sampled); any `actor_params` type, recurrent agents
    included (the state is reset as the actors reset it)."""
    policy = agent.greedy_step if greedy else agent.actor_step

    def step(ap, obs, key, state, reset):
        args = (ap, obs) if greedy else (ap, obs, key)
        if state is None:
            out = policy(*args)
            return (out if greedy else out[0]), None
        state = reset_core_state(state, reset, agent.initial_core_state(reset.shape[0]))
        out = policy(*args, state)
        return out[0], out[-1]  # (action, state) or (action, extras, state)

    return Player(step, agent.initial_core_state)


def sampling_actor(agent, actor_params: Any, num_envs: int) -> EvalActor:
    """EvalActor that samples with a sebulba Agent's own `actor_step`."""
    return agent_player(agent, greedy=False).actor(actor_params, num_envs)


def greedy_actor(network: nn.Module, ap: ActorParams, num_envs: int) -> EvalActor:
    """EvalActor taking the mode of `network`'s action distribution (`greedy_step`)."""
    return network_player(network).actor(ap, num_envs)


_WAY_OUT = ("sample instead, with the agent's own actor_step (scripts/evaluate.py and render.py "
            "--policy sample; --config.eval_policy=sample in training)")


def _trace(player: Player, actor_params: Any, obs) -> None:
    """Traces (does not run) one step of `player` on actor params and observations [B, ...]
    (arrays or shapes), from the initial state."""
    batch = jax.tree.leaves(obs)[0].shape[0]
    state = (jax.eval_shape(lambda: player.initial_state(batch))
             if player.initial_state is not None else None)
    reset = jax.ShapeDtypeStruct((batch,), jnp.bool_) if state is not None else None
    jax.eval_shape(player.step, actor_params, obs, jax.random.key(0), state, reset)


def _check_network_fits(network: nn.Module, player: Player, actor_params: Any, obs) -> None:
    """An EvalPolicyError naming the cause and the way out if the config's network cannot play
    the agent's actor params."""
    try:
        _trace(player, actor_params, obs)
    except Exception as e:  # noqa: BLE001 - any failure here is this one mismatch; named below
        # The first line of flax's error, without its link to the docs of that error.
        first = (str(e).strip().splitlines() or [""])[0]
        cause = re.sub(r"\s*\(https?://\S+\)", "", first).rstrip(".")
        raise EvalPolicyError(
            f"greedy evaluation plays the network config.network describes "
            f"({type(network).__name__}; the agent sets no Agent.greedy_step), and that network "
            f"cannot play the agent's actor_params ({type(e).__name__}: {cause}). The agent "
            f"builds its own network (e.g. a different head, docs/howto_network.md): {_WAY_OUT}, "
            f"or have its builder set Agent.greedy_step (agents.evaluation.make_greedy_step, "
            f"as agents/impala does).") from e


def eval_player(kind: str, network: nn.Module | None, agent, actor_params: Any, obs=None
                ) -> Player:
    """The evaluation player of `kind` for `agent` (see the module docstring).

    `network` is the one `config.network` describes (played greedily only when the agent sets
    no `greedy_step`); `actor_params` the agent's (arrays or shapes); with example observations
    `obs` [B, ...] the greedy step is traced on them here, so a network that does not fit
    fails now, before any game. Raises EvalPolicyError (a ValueError) for a kind that cannot
    play this agent.
    """
    if kind not in EVAL_POLICIES:
        raise EvalPolicyError(f"evaluation policy {kind!r}; allowed: {EVAL_POLICIES}.")
    if kind == "sample":
        return agent_player(agent, greedy=False)
    if getattr(agent, "greedy_step", None) is not None:
        player = agent_player(agent, greedy=True)
        if obs is not None:  # the agent's own code: an error here keeps its traceback
            _trace(player, actor_params, obs)
        return player
    if not isinstance(actor_params, ActorParams):
        raise EvalPolicyError(
            f"greedy evaluation needs the agent's actor_params to be agents.acting.ActorParams "
            f"(got {type(actor_params).__name__}) or the agent to set Agent.greedy_step; "
            f"{_WAY_OUT}.")
    player = network_player(network)
    if obs is not None:
        _check_network_fits(network, player, actor_params, obs)
    return player


def eval_actor(kind: str, network: nn.Module | None, agent, actor_params: Any, num_envs: int
               ) -> EvalActor:
    """A stateful player of `kind` for these actor params (`eval_player`, unchecked against
    observations)."""
    return eval_player(kind, network, agent, actor_params, None).actor(actor_params, num_envs)
