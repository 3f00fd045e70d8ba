"""Action distributions: one interface for every supported action space, built on distrax.

An `ActionDist` turns what the policy head outputs (`params`: a pytree of float arrays with any
leading batch dims, see networks/heads.py) into `sample`, `log_prob`, `entropy`, `kl` and `mode`.
The agents use only this interface, so IMPALA and PPO run unchanged on
- `Categorical`       Discrete(n): logits [..., n]; action int32 [...];
- `MultiCategorical`  MultiDiscrete(nvec): logits [..., sum(nvec)]; action int32 [..., k];
- `DiagGaussian`      Box(low, high, (d,)): {"mean", "log_std"} [..., d]; action float32 [..., d],
  kept inside the bounds by `bounds="clip"` (a censored Gaussian, below) or `"tanh"` (squashed);
- `Joint`             Dict/Tuple of the above (mixed actions): params and actions are dicts or
  tuples of the parts'; log-prob, entropy and KL are sums over the independent parts.

Bounds. `clip`: a ~ N(mean, std) is clipped to [low, high], and `log_prob` is that of the
*clipped* action: the Gaussian density inside the box and the tail mass log Phi((low - m) / s)
or log(1 - Phi((high - m) / s)) on a bound (Fujita & Maeda 2018, "Clipped Action Policy
Gradient"). So the stored action is exactly the one the env executed, and the importance
ratios of V-trace and PPO are correct. Its entropy and KL are those of the unclipped Gaussian
(the censored law has no density on the bounds; by data processing the Gaussian KL bounds the
clipped one from above). `tanh`: a = mid + half * tanh(u), u ~ N(mean, std), with the
change-of-variables correction in `log_prob` and an entropy computed by Gauss-Hermite
quadrature of E[log |da/du|] (no closed form exists); actions on the bounds are moved 1e-6
inside before atanh so that their log-prob stays finite.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Any

import distrax
import jax
import jax.numpy as jnp
import numpy as np

Params = Any
Action = Any
_BOUND_EPS = 1e-6   # tanh: |tanh(u)| <= 1 - eps before atanh, so bound actions stay finite
_GH_POINTS = 128    # Gauss-Hermite nodes for the tanh entropy: error < 1e-4 for std <= e,
                    # < 5e-3 up to the head's largest std e^2 (tests/networks)


class ActionDist(abc.ABC):
    """A policy's action distribution, as pure functions of the head's output."""

    @abc.abstractmethod
    def sample(self, params: Params, key: jax.Array) -> Action: ...

    @abc.abstractmethod
    def log_prob(self, params: Params, action: Action) -> jax.Array:
        """log pi(action), shape = the batch dims of params."""

    @abc.abstractmethod
    def entropy(self, params: Params) -> jax.Array: ...

    @abc.abstractmethod
    def kl(self, p: Params, q: Params) -> jax.Array:
        """KL(p || q) between two parameterisations."""

    @abc.abstractmethod
    def mode(self, params: Params) -> Action:
        """The most likely action (greedy evaluation)."""


@dataclasses.dataclass(frozen=True)
class Categorical(ActionDist):
    num_actions: int

    def _d(self, logits):
        return distrax.Categorical(logits=logits)

    def sample(self, params, key):
        return self._d(params).sample(seed=key).astype(jnp.int32)

    def log_prob(self, params, action):
        return self._d(params).log_prob(action)

    def entropy(self, params):
        return self._d(params).entropy()

    def kl(self, p, q):
        return self._d(p).kl_divergence(self._d(q))

    def mode(self, params):
        return jnp.argmax(params, axis=-1).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class MultiCategorical(ActionDist):
    """Independent categoricals, one per entry of `nvec`; logits are concatenated."""

    nvec: tuple[int, ...]

    def _parts(self, logits):
        return [distrax.Categorical(logits=x)
                for x in jnp.split(logits, np.cumsum(self.nvec)[:-1], axis=-1)]

    def sample(self, params, key):
        keys = jax.random.split(key, len(self.nvec))
        return jnp.stack([d.sample(seed=k) for d, k in zip(self._parts(params), keys)],
                         axis=-1).astype(jnp.int32)

    def log_prob(self, params, action):
        return sum(d.log_prob(action[..., i]) for i, d in enumerate(self._parts(params)))

    def entropy(self, params):
        return sum(d.entropy() for d in self._parts(params))

    def kl(self, p, q):
        return sum(a.kl_divergence(b) for a, b in zip(self._parts(p), self._parts(q)))

    def mode(self, params):
        return jnp.stack([jnp.argmax(d.logits, -1) for d in self._parts(params)],
                         axis=-1).astype(jnp.int32)


BOUNDS = ("clip", "tanh")


@dataclasses.dataclass(frozen=True)
class DiagGaussian(ActionDist):
    """Diagonal Gaussian over a Box of shape (d,), kept in bounds by clipping or tanh.

    `state_dependent_std`, `init_log_std` and the log-std range configure the head
    (networks/heads.py); the distribution itself only reads params["mean"], ["log_std"].
    """

    low: tuple[float, ...]
    high: tuple[float, ...]
    bounds: str = "clip"
    state_dependent_std: bool = False
    init_log_std: float = 0.0
    min_log_std: float = -20.0
    max_log_std: float = 2.0

    def __post_init__(self) -> None:
        if self.bounds not in BOUNDS:
            raise ValueError(f"bounds={self.bounds!r}; allowed: {BOUNDS}.")
        if len(self.low) != len(self.high) or not self.low:
            raise ValueError(f"low {self.low} and high {self.high} must be non-empty and of "
                             f"equal length.")
        if any(not lo < hi for lo, hi in zip(self.low, self.high)):
            raise ValueError(f"every low must be < high; got low={self.low} high={self.high}.")
        if self.bounds == "tanh" and not np.all(np.isfinite(self.low + self.high)):
            raise ValueError(f"bounds='tanh' needs finite bounds; got low={self.low} "
                             f"high={self.high}. Use bounds='clip' for unbounded dimensions.")

    @property
    def dim(self) -> int:
        return len(self.low)

    def _lh(self):
        return np.asarray(self.low, np.float32), np.asarray(self.high, np.float32)

    def _base(self, params):
        return distrax.MultivariateNormalDiag(params["mean"], jnp.exp(params["log_std"]))

    def _squashed(self, params):
        """y = tanh(u) in (-1, 1)^d; the action is mid + half * y (affine kept outside, so
        log_prob needs no float32 round trip through the affine map near the bounds)."""
        elementwise = distrax.Normal(params["mean"], jnp.exp(params["log_std"]))
        return distrax.Independent(distrax.Transformed(elementwise, distrax.Tanh()), 1)

    def sample(self, params, key):
        if self.bounds == "tanh":
            low, high = self._lh()
            y = self._squashed(params).sample(seed=key)
            return jnp.clip((high + low) / 2 + (high - low) / 2 * y, low, high)
        low, high = self._lh()
        return jnp.clip(self._base(params).sample(seed=key), low, high)

    def log_prob(self, params, action):
        low, high = self._lh()
        if self.bounds == "tanh":
            mid, half = (high + low) / 2, (high - low) / 2
            y = jnp.clip((action - mid) / half, -1.0 + _BOUND_EPS, 1.0 - _BOUND_EPS)
            return self._squashed(params).log_prob(y) - np.sum(np.log(half))
        mean, log_std = params["mean"], params["log_std"]
        std = jnp.exp(log_std)
        inside = distrax.Normal(mean, std).log_prob(action)
        # Tail masses on the bounds. Infinite bounds are replaced by 0 in the tail terms (never
        # selected there): an inf in the branch jnp.where discards would make its gradient NaN.
        z_low = (np.where(np.isfinite(low), low, 0.0) - mean) / std
        z_high = (np.where(np.isfinite(high), high, 0.0) - mean) / std
        at_low = action <= low
        at_high = action >= high
        logp = jnp.where(at_low, jax.scipy.special.log_ndtr(z_low),
                         jnp.where(at_high, jax.scipy.special.log_ndtr(-z_high), inside))
        return jnp.sum(logp, axis=-1)

    def entropy(self, params):
        base = self._base(params).entropy()
        if self.bounds != "tanh":
            return base
        low, high = self._lh()
        # H[a] = H[u] + E[log |da/du|], log |da/du| = log half + log(1 - tanh(u)^2); the
        # expectation over u ~ N(m, s^2) by Gauss-Hermite: E f(u) ~ sum_k w_k f(m + sqrt2 s x_k)
        # / sqrt(pi). log(1 - tanh^2 u) = 2 (log 2 - u - softplus(-2u)) is the stable form.
        x, w = np.polynomial.hermite.hermgauss(_GH_POINTS)
        u = params["mean"][..., None] + np.sqrt(2.0) * jnp.exp(params["log_std"])[..., None] * x
        log_det = 2.0 * (np.log(2.0) - u - jax.nn.softplus(-2.0 * u))
        expected = jnp.sum(w * log_det, axis=-1) / np.sqrt(np.pi)
        return base + jnp.sum(expected + np.log((high - low) / 2), axis=-1)

    def kl(self, p, q):
        # Exact for tanh (KL is invariant under the bijection); an upper bound for clip.
        return self._base(p).kl_divergence(self._base(q))

    def mode(self, params):
        low, high = self._lh()
        if self.bounds == "tanh":
            return (high + low) / 2 + (high - low) / 2 * jnp.tanh(params["mean"])
        return jnp.clip(params["mean"], low, high)


@dataclasses.dataclass(frozen=True)
class Joint(ActionDist):
    """Independent sub-actions (a mixed action space): a dict (`keys` given) or a tuple."""

    parts: tuple[ActionDist, ...]
    keys: tuple[str, ...] | None = None  # Dict space: the sub-action names; None: a tuple

    def __post_init__(self) -> None:
        if self.keys is not None and len(self.keys) != len(self.parts):
            raise ValueError(f"keys {self.keys} do not match {len(self.parts)} parts.")

    def _items(self, tree) -> list:
        if self.keys is None:
            return list(tree)
        return [tree[k] for k in self.keys]

    def _build(self, values):
        return tuple(values) if self.keys is None else dict(zip(self.keys, values))

    def sample(self, params, key):
        keys = jax.random.split(key, len(self.parts))
        return self._build([d.sample(p, k) for d, p, k in
                            zip(self.parts, self._items(params), keys)])

    def log_prob(self, params, action):
        return sum(d.log_prob(p, a) for d, p, a in
                   zip(self.parts, self._items(params), self._items(action)))

    def entropy(self, params):
        return sum(d.entropy(p) for d, p in zip(self.parts, self._items(params)))

    def kl(self, p, q):
        return sum(d.kl(a, b) for d, a, b in zip(self.parts, self._items(p), self._items(q)))

    def mode(self, params):
        return self._build([d.mode(p) for d, p in zip(self.parts, self._items(params))])


# The logit of an illegal action: its probability underflows to exactly 0 in float32, while
# its log-probability stays finite, so 0 * log p terms (entropy, KL) are 0, never NaN (-inf
# would make them NaN). sb3-contrib's MaskableCategorical uses -1e8 for the same reason.
MASKED_LOGIT = -1e9


def mask_width(dist: ActionDist) -> int:
    """The length of the legal-action mask `dist` takes: n for Discrete(n), sum(nvec) for
    MultiDiscrete (each part's mask, concatenated); ValueError for a distribution no mask
    applies to."""
    if isinstance(dist, Categorical):
        return dist.num_actions
    if isinstance(dist, MultiCategorical):
        return int(sum(dist.nvec))
    raise ValueError(f"an action mask applies to Discrete and MultiDiscrete actions (a "
                     f"categorical head); this env's actions make {type(dist).__name__}.")


def mask_logits(dist: ActionDist, logits: jax.Array, mask: jax.Array) -> jax.Array:
    """`logits` [..., n] with the illegal actions' (mask == 0) set to MASKED_LOGIT.

    Every use of the distribution then sees the legal actions only: sampling and `mode` never
    pick an illegal one, log-probabilities and entropy are those of the distribution
    renormalised over the legal actions, and the gradient reaching a masked logit is 0.
    `mask` [..., n] may be bool, int or float (1 = legal), e.g. jumanji's and pgx's masks.
    A mask (or a multi-categorical part's) that allows nothing masks nothing: that step's
    policy is the unmasked one (`allows_nothing` finds those steps; the runtime stops on them
    unless told they are the env's rule, podracer/legal.py)."""
    width = mask_width(dist)
    if mask.shape[-1:] != (width,):
        kind = ("each part's mask, concatenated" if isinstance(dist, MultiCategorical)
                else "one entry per action")
        raise ValueError(f"an action mask of shape {tuple(mask.shape)}: {dist} takes "
                         f"[..., {width}] ({kind}).")
    parts = _mask_parts(dist, jnp.asarray(mask) != 0)
    legal = jnp.concatenate([p | ~jnp.any(p, -1, keepdims=True) for p in parts], -1)
    return jnp.where(legal, logits, jnp.asarray(MASKED_LOGIT, logits.dtype))


def _mask_parts(dist: ActionDist, legal: jax.Array) -> list[jax.Array]:
    """A mask [..., n] split into the parts of a multi-categorical (one part otherwise)."""
    if isinstance(dist, MultiCategorical):
        return jnp.split(legal, np.cumsum(dist.nvec)[:-1], axis=-1)
    return [legal]


def allows_nothing(dist: ActionDist, mask: jax.Array) -> jax.Array:
    """[...] True where `mask` [..., n] leaves no legal action (for a multi-categorical: no
    legal value of some part), where `mask_logits` then masks nothing."""
    parts = _mask_parts(dist, jnp.asarray(mask) != 0)
    return jnp.any(jnp.stack([~jnp.any(p, -1) for p in parts], -1), -1)


SUPPORTED = "Discrete, MultiDiscrete (1-D), Box (float, 1-D), and Dict/Tuple of those"


def from_space(space, bounds: str = "clip", state_dependent_std: bool = False,
               init_log_std: float = 0.0) -> ActionDist:
    """The distribution for a gymnasium action space; ValueError naming unsupported ones."""
    from gymnasium import spaces
    if isinstance(space, spaces.Discrete):
        if int(space.start) != 0:
            raise ValueError(f"action space {space} starts at {space.start}; only Discrete "
                             f"spaces starting at 0 are supported.")
        return Categorical(int(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        if space.nvec.ndim != 1 or np.any(space.start != 0):
            raise ValueError(f"action space {space}: only 1-D MultiDiscrete starting at 0 "
                             f"is supported.")
        return MultiCategorical(tuple(int(n) for n in space.nvec))
    if isinstance(space, spaces.Box):
        if len(space.shape) != 1 or not np.issubdtype(space.dtype, np.floating):
            raise ValueError(f"action space {space}: Box actions must be 1-D floats; supported: "
                             f"{SUPPORTED}.")
        return DiagGaussian(tuple(float(x) for x in space.low),
                            tuple(float(x) for x in space.high), bounds=bounds,
                            state_dependent_std=state_dependent_std, init_log_std=init_log_std)
    sub = dict(bounds=bounds, state_dependent_std=state_dependent_std,
               init_log_std=init_log_std)
    if isinstance(space, spaces.Dict):
        return Joint(tuple(from_space(s, **sub) for s in space.spaces.values()),
                     keys=tuple(space.spaces.keys()))
    if isinstance(space, spaces.Tuple):
        return Joint(tuple(from_space(s, **sub) for s in space.spaces))
    raise ValueError(f"unsupported action space {space!r}; supported: {SUPPORTED}.")
