"""What the agents share around the policy: actor params, acting, rollout preprocessing.

Acting samples from the network's action distribution (`network.dist`, networks/
distributions.py) and keeps the behaviour log-prob `logp` of the sampled action in the extras:
it is all V-trace and PPO's importance ratios need, whatever the action space. PPO also keeps
the behaviour distribution's parameters (`policy`, for its KL terms) and the value.

Observation normalisation and reward scaling (agents/normalization.py) are applied here to
the rollout before an agent's loss sees it: observations with the statistics the actors used
(the ones shipped with the current parameters), rewards with the return statistics after this
rollout's update.

Recurrent networks (networks.is_recurrent; docs/recurrent.md) are handled here too, so the
agents' losses read the same for both: `apply_time_major` re-runs the core over a rollout from
the state the actor stored (`Rollout.core_state`), resetting it where episodes start
(`core_resets`); `make_actor_step` steps it; `greedy_step` and `EvalActor` are the evaluation
policy for scripts.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import normalization as norm_lib
from networks import is_recurrent
from sebulba.agent import Rollout, reset_core_state


class ActorParams(NamedTuple):
    """What the learner ships to the actors after each update."""

    params: Any
    obs_norm: Any  # RunningStats per observation leaf; None when observations are raw


def actor_params(params: Any, norm: norm_lib.NormState, cfg) -> ActorParams:
    return ActorParams(params, norm.obs if cfg.obs_norm else None)


def actor_obs(ap: ActorParams, obs: Any, cfg) -> Any:
    if ap.obs_norm is None:
        return obs
    return norm_lib.normalize_obs(ap.obs_norm, obs, cfg.obs_clip)


def init_params(network: nn.Module, key: jax.Array, obs: Any) -> Any:
    """Network parameters from example observations [B, ...], recurrent or not."""
    if not is_recurrent(network):
        return network.init(key, obs)
    batch = jax.tree.leaves(obs)[0].shape[0]
    return network.init(key, _add_time(obs), network.initial_state(batch),
                        jnp.zeros((1, batch), bool))


def initial_core_state(network: nn.Module):
    """`Agent.initial_core_state` for `network`: its zero state, or None (feed-forward)."""
    return network.initial_state if is_recurrent(network) else None


def _add_time(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.asarray(x)[None], tree)


def _drop_time(tree: Any) -> Any:
    return jax.tree.map(lambda x: x[0], tree)


def step_network(network: nn.Module, params, obs, core_state=None):
    """One batched step: ((policy, value), new core state); the state is None and passed
    through for feed-forward networks. The caller has already reset the state where an
    episode starts (sebulba.agent.reset_core_state)."""
    if core_state is None:
        return network.apply(params, obs), None
    batch = jax.tree.leaves(obs)[0].shape[0]
    out, core_state = network.apply(params, _add_time(obs), core_state,
                                    jnp.zeros((1, batch), bool))
    return _drop_time(out), core_state


def make_actor_step(network: nn.Module, cfg, keep_policy: bool = False,
                    keep_value: bool = False):
    """actor_step(ActorParams, obs, key) -> (action, {"logp", ["policy"], ["value"]}), or for
    recurrent networks actor_step(ActorParams, obs, key, core_state) -> (action, extras,
    core_state) (the runtime's recurrent signature, sebulba/agent.py)."""
    dist = network.dist

    def step(ap: ActorParams, obs, key: jax.Array, core_state):
        (policy, value), core_state = step_network(network, ap.params,
                                                   actor_obs(ap, obs, cfg), core_state)
        action = dist.sample(policy, key)
        # The learner recomputes log-probs with the same function: the on-policy ratio is 1.
        extras = {"logp": dist.log_prob(policy, action)}
        if keep_policy:
            extras["policy"] = policy
        if keep_value:
            extras["value"] = value
        return action, extras, core_state

    if is_recurrent(network):
        return step
    return lambda ap, obs, key: step(ap, obs, key, None)[:2]


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
    "greedy" needs `ActorParams` (an agent built on this module, such as IMPALA and PPO);
    "sample" runs any agent's own actor_step."""
    if kind not in EVAL_POLICIES:
        raise ValueError(f"evaluation policy {kind!r}; allowed: {EVAL_POLICIES}.")
    if kind == "greedy" and not isinstance(actor_params, ActorParams):
        raise ValueError(f"greedy evaluation needs the agent's actor_params to be "
                         f"agents.policy.ActorParams (got {type(actor_params).__name__}); "
                         f"sample instead (the agent's own actor_step).")


def eval_actor(kind: str, network: nn.Module, agent, actor_params: Any, num_envs: int,
               obs_clip: float) -> EvalActor:
    """The evaluation player of `kind` (see `check_eval_policy`): `greedy_actor` or
    `sampling_actor`."""
    check_eval_policy(kind, actor_params)
    if kind == "sample":
        return sampling_actor(agent, actor_params, num_envs)
    return greedy_actor(network, actor_params, obs_clip, num_envs)


def zero_state_where(network: nn.Module, core_state, reset: jax.Array):
    """The network's initial state where `reset` [B] is set, `core_state` elsewhere."""
    return reset_core_state(core_state, reset, network.initial_state(reset.shape[0]))


def preprocess(norm: norm_lib.NormState, rollout: Rollout, cfg, axis_name: str
               ) -> tuple[norm_lib.NormState, Rollout, dict[str, jax.Array]]:
    """Normalised observations / scaled rewards for the loss, and the updated statistics."""
    metrics: dict[str, jax.Array] = {}
    obs, reward = rollout.obs, rollout.reward
    if cfg.obs_norm:
        # The actors acted on obs normalised with the current statistics: use those, then
        # fold this rollout in for the next one.
        obs = norm_lib.normalize_obs(norm.obs, rollout.obs, cfg.obs_clip)
        norm = norm._replace(obs=norm_lib.update_obs_stats(norm.obs, rollout.obs, axis_name))
    if cfg.reward_scaling:
        done = jnp.logical_or(rollout.terminated, rollout.truncated)
        norm, reward = norm_lib.scale_rewards(norm, rollout.reward, done, rollout.valid,
                                              cfg.discount, axis_name)
        metrics["norm/return_std"] = jnp.sqrt(norm.ret.var)
    return norm, rollout._replace(obs=obs, reward=reward), metrics


def core_resets(valid: jax.Array, length: int) -> jax.Array:
    """[length, B] reset flags for a learner unroll of obs_0..obs_{length-1} that starts from
    the stored (already reset) state: reset[0] = False, reset[t] = not valid[t-1] (step t-1 was
    an env reset step, so obs_t is a new episode's first observation)."""
    chex.assert_rank(valid, 2)
    first = jnp.zeros((1, valid.shape[1]), bool)
    return jnp.concatenate([first, ~valid[:length - 1]], axis=0)


def apply_time_major(network: nn.Module, params, obs, core_state=None, valid=None):
    """Runs the network on [T, B, ...] observations: feed-forward as one [T*B, ...] batch;
    recurrent as an unroll from `core_state` ([1, B, ...] leaves, as stored in the Rollout)
    with episode resets from `valid` ([>= T-1, B], see `core_resets`)."""
    if is_recurrent(network):
        if core_state is None or valid is None:
            raise ValueError("a recurrent network needs the rollout's core_state and valid "
                             "flags to be unrolled (was the Rollout made by a recurrent "
                             "agent's actors?).")
        length = jax.tree.leaves(obs)[0].shape[0]
        out, _ = network.apply(params, obs, _drop_time(core_state),
                               core_resets(valid, length))
        return out
    lead = jax.tree.leaves(obs)[0].shape[:2]
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), obs)
    outputs = network.apply(params, flat)
    return jax.tree.map(lambda x: x.reshape(lead + x.shape[1:]), outputs)


def drop_last(tree: Any) -> Any:
    """[T+1, ...] -> [T, ...] on every leaf (network outputs on obs_0..obs_{T-1})."""
    return jax.tree.map(lambda x: x[:-1], tree)
