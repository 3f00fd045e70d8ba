"""Evaluation players for scripts and the in-training evaluation: greedy or sampled play.

An `EvalActor` plays a batch of envs with EnvPool's autoreset, feed-forward or recurrent alike;
`eval_actor(kind, ...)` picks the player of a kind in `EVAL_POLICIES`: "greedy" takes the mode
of the action distribution (agents built on agents/acting.py), "sample" runs any agent's own
`actor_step`.
"""
from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import normalization as norm_lib
from agents.acting import ActorParams, step_network
from agents.unroll import zero_state_where
from networks import is_recurrent
from sebulba.agent import reset_core_state


def greedy_step(network: nn.Module, ap: ActorParams, obs, core_state, reset, obs_clip: float
                ) -> tuple[Any, Any]:
    """Evaluation policy: (mode of the action distribution, new core state) for a batch of
    raw observations [B, ...]; obs normalisation as the actors do when `ap.obs_norm` is set.

    Recurrent networks: `core_state` starts as `network.initial_state(B)`; `reset` [B] marks
    the envs whose new episode's first observation this is (True on the first call, then
    True exactly where the previous step was an env reset step). Feed-forward: pass None for
    both; the returned state is None. Jit it with `network` and `obs_clip` static (e.g.
    `jax.jit(functools.partial(greedy_step, network, obs_clip=c))`).
    """
    if ap.obs_norm is not None:
        obs = norm_lib.normalize_obs(ap.obs_norm, obs, obs_clip)
    if core_state is not None:
        core_state = zero_state_where(network, core_state, reset)
    (policy, _), core_state = step_network(network, ap.params, obs, core_state)
    return network.dist.mode(policy), core_state


class EvalActor:
    """A stateful policy over a batch of envs with EnvPool's autoreset, for scripts (evaluate,
    render); feed-forward or recurrent alike:

        actor = greedy_actor(network, agent.actor_params(state), obs_clip, num_envs)
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


def greedy_actor(network: nn.Module, ap: ActorParams, obs_clip: float, num_envs: int
                 ) -> EvalActor:
    """EvalActor taking the mode of the action distribution (`greedy_step`)."""
    return EvalActor(
        lambda obs, key, state, reset: greedy_step(network, ap, obs, state, reset, obs_clip),
        num_envs, network.initial_state if is_recurrent(network) else None)


def sampling_actor(agent, actor_params: Any, num_envs: int) -> EvalActor:
    """EvalActor that samples with a sebulba Agent's own `actor_step` (any agent, any
    `actor_params` type), recurrent agents included."""

    def step(obs, key, state, reset):
        if state is None:
            return agent.actor_step(actor_params, obs, key)[0], None
        state = reset_core_state(state, reset, agent.initial_core_state(reset.shape[0]))
        action, _, state = agent.actor_step(actor_params, obs, key, state)
        return action, state

    return EvalActor(step, num_envs, agent.initial_core_state)


EVAL_POLICIES = ("greedy", "sample")


def check_eval_policy(kind: str, actor_params: Any) -> None:
    """Raises ValueError unless `kind` can play with these actor params (arrays or shapes):
    "greedy" needs `ActorParams` (an agent built on agents/acting.py, such as IMPALA and PPO);
    "sample" runs any agent's own actor_step."""
    if kind not in EVAL_POLICIES:
        raise ValueError(f"evaluation policy {kind!r}; allowed: {EVAL_POLICIES}.")
    if kind == "greedy" and not isinstance(actor_params, ActorParams):
        raise ValueError(f"greedy evaluation needs the agent's actor_params to be "
                         f"agents.acting.ActorParams (got {type(actor_params).__name__}); "
                         f"sample instead (the agent's own actor_step).")


def eval_actor(kind: str, network: nn.Module, agent, actor_params: Any, num_envs: int,
               obs_clip: float) -> EvalActor:
    """The evaluation player of `kind` (see `check_eval_policy`): `greedy_actor` or
    `sampling_actor`."""
    check_eval_policy(kind, actor_params)
    if kind == "sample":
        return sampling_actor(agent, actor_params, num_envs)
    return greedy_actor(network, actor_params, obs_clip, num_envs)
