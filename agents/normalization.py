"""Running observation normalisation and reward scaling, shared by the agents.

Both live in the learner state and are updated by the learner from the batches it trains on,
with the batch moments summed over the learner axis (psum), so every learner device holds the
same statistics. The observation statistics travel to the actors with the parameters
(`agent.actor_params`), so actors and learner normalise alike.

- Observations (openai baselines' VecNormalize / cleanrl's NormalizeObservation): per-feature
  running mean and variance over all observations seen, obs -> clip((obs - mean) / sqrt(var +
  1e-8), -clip, clip). The moments are merged exactly (Chan et al.'s parallel formula), so they
  equal NumPy's mean/var over all data seen.
- Rewards (the PPO paper's MuJoCo "reward scaling", baselines' VecNormalize): each env column
  carries a discounted return R_t = gamma R_{t-1} + r_t (reset at episode ends); rewards are
  divided by the running std of R (not centred). The per-column accumulators of all learner
  devices are one replicated [batch_envs] vector: each device reads and rewrites its own slice
  (all_gather), so the runtime's fixed column layout keeps every env's return going.

`preprocess` applies both to a rollout before an agent's loss sees it: observations with the
statistics the actors used (the ones shipped with the current parameters), rewards with the
return statistics after this rollout's update.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import flax
import jax
import jax.numpy as jnp

from podracer import collectives
from podracer.agent import Rollout

_EPS = 1e-8


class RunningStats(NamedTuple):
    """Count, mean and (population) variance of everything seen so far, per feature."""

    count: jax.Array
    mean: jax.Array
    var: jax.Array

    @classmethod
    def zeros(cls, shape=()) -> "RunningStats":
        # Distinct buffers (the learner state is donated; one buffer may not be donated twice).
        return cls(jnp.zeros((), jnp.float32), jnp.zeros(shape, jnp.float32),
                   jnp.ones(shape, jnp.float32))

    def update(self, x: jax.Array, mask: jax.Array, axis_name: str | None) -> "RunningStats":
        """Adds the entries of x whose leading dims (mask.shape) are True, on every device."""
        lead = mask.ndim
        m = mask.astype(jnp.float32).reshape(mask.shape + (1,) * (x.ndim - lead))
        x = x.astype(jnp.float32)
        axes = tuple(range(lead))
        psum = (lambda v: collectives.psum(v, axis_name)) if axis_name else (lambda v: v)
        n, s = psum((jnp.sum(mask.astype(jnp.float32)), jnp.sum(m * x, axes)))
        b_mean = s / jnp.maximum(n, 1.0)
        b_m2 = psum(jnp.sum(m * jnp.square(x - b_mean), axes))  # two passes: stable
        total = self.count + n
        safe = jnp.maximum(total, 1.0)
        delta = b_mean - self.mean
        mean = self.mean + delta * n / safe
        m2 = self.var * self.count + b_m2 + jnp.square(delta) * self.count * n / safe
        seen = total > 0
        return RunningStats(total, jnp.where(seen, mean, self.mean),
                            jnp.where(seen, m2 / safe, self.var))


class Raw(NamedTuple):
    """The statistics of an observation entry that is never normalised (a legal-action mask:
    its zeros must stay zeros); no arrays."""


def _is_stats(s: Any) -> bool:
    return isinstance(s, (RunningStats, Raw))


def raw_keys(network: Any) -> tuple[str, ...]:
    """The observation entries `network` reads as they are: its legal-action mask's key."""
    key = getattr(network, "action_mask_key", "")
    return (key,) if key else ()


class NormState(NamedTuple):
    """Normaliser state in the learner state (placeholders when switched off)."""

    obs: Any                # RunningStats per observation leaf (shape of one observation)
    ret: RunningStats       # statistics of the discounted return (scalar)
    ret_acc: jax.Array      # [batch_envs] discounted return of every env column


def init_state(example_obs: Any, obs_norm: bool, reward_scaling: bool,
               batch_envs: int, raw: tuple[str, ...] = ()) -> NormState:
    """`example_obs` has a leading batch dim; `batch_envs`: env columns per update (global);
    `raw`: the keys of a dict observation's entries left as they are (`raw_keys`)."""
    if reward_scaling and batch_envs < 1:
        raise ValueError(f"reward scaling needs the number of env columns per update "
                         f"(batch_envs), got {batch_envs}; pass batch_envs=RuntimeConfig"
                         f".batch_envs to make_agent.")
    obs = jax.tree.map(lambda x: RunningStats.zeros(x.shape[1:] if obs_norm else ()),
                       example_obs)
    if raw and isinstance(obs, dict):
        obs = {k: Raw() if k in raw else v for k, v in obs.items()}
    return NormState(obs, RunningStats.zeros(),
                     jnp.zeros((batch_envs if reward_scaling else 1,), jnp.float32))


@flax.struct.dataclass
class ObsNorm:
    """What actors and players need to normalise observations as the learner does: the
    running statistics and the clip (static: a config constant, not an array)."""

    stats: Any                                              # RunningStats per observation leaf
    clip: float = flax.struct.field(pytree_node=False)     # the agent's obs_clip (0: none)

    def __call__(self, obs: Any) -> Any:
        return normalize_obs(self.stats, obs, self.clip)


def normalize_obs(stats: Any, obs: Any, clip: float) -> Any:
    """(obs - mean) / std, clipped to [-clip, clip] (clip 0: no clipping); float32."""
    def norm(s: RunningStats | Raw, x):
        if isinstance(s, Raw):
            return x
        y = (x.astype(jnp.float32) - s.mean) / jnp.sqrt(s.var + _EPS)
        return jnp.clip(y, -clip, clip) if clip > 0 else y
    return jax.tree.map(norm, stats, obs, is_leaf=_is_stats)


def update_obs_stats(stats: Any, obs: Any, axis_name: str) -> Any:
    """Adds the rollout's observations [T+1, B, ...] except the bootstrap one (it comes back
    as the first observation of the next rollout)."""
    def upd(s: RunningStats | Raw, x):
        if isinstance(s, Raw):
            return s
        x = x[:-1]
        return s.update(x, jnp.ones(x.shape[:2], bool), axis_name)
    return jax.tree.map(upd, stats, obs, is_leaf=_is_stats)


def discounted_returns(acc: jax.Array, r_t: jax.Array, done_t: jax.Array,
                       gamma: float) -> tuple[jax.Array, jax.Array]:
    """R_t = gamma R_{t-1} + r_t, R set to 0 after steps that end an episode. [T, B] in,
    returns (R_t [T, B], carry [B])."""
    def step(carry, x):
        r, done = x
        ret = gamma * carry + r
        return jnp.where(done, 0.0, ret), ret

    carry, rets = jax.lax.scan(step, acc, (r_t, done_t))
    return rets, carry


def scale_rewards(state: NormState, r_t: jax.Array, done_t: jax.Array, valid_t: jax.Array,
                  gamma: float, axis_name: str) -> tuple[NormState, jax.Array]:
    """Updates the return statistics with this rollout, then divides r_t by their std."""
    b_local = r_t.shape[1]
    total = state.ret_acc.shape[0]
    if total % b_local:
        raise ValueError(f"reward scaling was built for {total} env columns per update, but "
                         f"this learner device holds {b_local}; pass batch_envs="
                         f"RuntimeConfig.batch_envs to make_agent.")
    idx = jax.lax.axis_index(axis_name)
    acc = jax.lax.dynamic_index_in_dim(state.ret_acc.reshape(-1, b_local), idx, 0,
                                       keepdims=False)
    rets, acc = discounted_returns(acc, r_t, done_t, gamma)
    ret = state.ret.update(rets, valid_t, axis_name)
    acc = collectives.all_gather_tiled(acc, axis_name)
    scaled = r_t / jnp.sqrt(ret.var + _EPS)
    return state._replace(ret=ret, ret_acc=acc), scaled


def preprocess(norm: NormState, rollout: Rollout, cfg, axis_name: str
               ) -> tuple[NormState, Rollout, dict[str, jax.Array]]:
    """Normalised observations / scaled rewards for the loss, and the updated statistics
    (`cfg`: an agent config with obs_norm, obs_clip, reward_scaling and discount)."""
    metrics: dict[str, jax.Array] = {}
    obs, reward = rollout.obs, rollout.reward
    if cfg.obs_norm:
        # The actors acted on obs normalised with the current statistics: use those, then
        # fold this rollout in for the next one.
        obs = normalize_obs(norm.obs, rollout.obs, cfg.obs_clip)
        norm = norm._replace(obs=update_obs_stats(norm.obs, rollout.obs, axis_name))
    if cfg.reward_scaling:
        done = jnp.logical_or(rollout.terminated, rollout.truncated)
        norm, reward = scale_rewards(norm, rollout.reward, done, rollout.valid, cfg.discount,
                                     axis_name)
        metrics["norm/return_std"] = jnp.sqrt(norm.ret.var)
    return norm, rollout._replace(obs=obs, reward=reward), metrics
