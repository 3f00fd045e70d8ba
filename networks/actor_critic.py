"""Actor-critic networks: a torso, optionally a recurrent core, then a policy and a value head.

`ActorCritic` is feed-forward: `apply(params, obs [B, ...]) -> (policy, value [B])`.
`RecurrentActorCritic` puts a core (networks/cores.py, an LSTM) between torso and heads and is
time-major: `apply(params, obs [T, B, ...], state, reset [T, B]) -> ((policy, value [T, B]),
state)`. `is_recurrent(network)` tells them apart; agents/acting.py and agents/unroll.py hide
the difference from the agents (acting, learner unrolls, greedy evaluation).

Legal actions: with `action_mask_key`, the dict observation's entry of that key masks the
categorical head's logits (networks/distributions.py, `mask_logits`), so acting, the losses'
log-probabilities and entropies, and greedy play all use the distribution over the legal
actions; the torso does not see the mask unless `torso_sees_mask`.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from networks.cores import LSTMCore, lstm_initial_state
from networks.distributions import ActionDist, Categorical, mask_logits
from networks.heads import PolicyHead


def _value_head(h: jax.Array) -> jax.Array:
    """Linear value [B] (gain 1.0, float32)."""
    value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0),
                     bias_init=nn.initializers.zeros)(h)
    return jnp.squeeze(value, -1).astype(jnp.float32)


def is_recurrent(network: Any) -> bool:
    """True for networks with a core state (RecurrentActorCritic and lookalikes)."""
    return callable(getattr(network, "initial_state", None))


class _ActorCriticBase(nn.Module):
    """The fields both actor-critics share, and their action distribution `dist`: the
    configured `action_dist`, or a Categorical over `num_actions`."""

    torso: nn.Module
    num_actions: int = 0
    shared_torso: bool = True
    action_dist: ActionDist | None = None
    action_mask_key: str = ""     # the observation key of the legal-action mask; "" = none
    torso_sees_mask: bool = False  # True: the torso also gets the mask as an input
    mask_may_be_empty: bool = False  # True: a mask allowing nothing is the env's rule, not a bug

    def _split_mask(self, obs: Any) -> tuple[Any, jax.Array | None]:
        """(the observation the torso gets, the legal-action mask or None)."""
        key = self.action_mask_key
        if not key:
            return obs, None
        if not hasattr(obs, "keys") or key not in obs:
            entries = sorted(obs.keys()) if hasattr(obs, "keys") else "none: one array"
            raise ValueError(f"action_mask_key={key!r} names no entry of the observation "
                             f"(entries: {entries}).")
        mask = obs[key]
        if not self.torso_sees_mask:
            obs = {k: v for k, v in obs.items() if k != key}
        return obs, mask

    def _masked(self, policy: Any, mask: jax.Array | None) -> Any:
        return policy if mask is None else mask_logits(self.dist, policy, mask)

    @property
    def dist(self) -> ActionDist:
        if self.action_dist is not None:
            return self.action_dist
        if self.num_actions < 1:
            raise ValueError(f"{type(self).__name__} needs action_dist or num_actions >= 1, "
                             f"got num_actions={self.num_actions}.")
        return Categorical(self.num_actions)


class ActorCritic(_ActorCriticBase):
    """Torso with a policy head (networks/heads.py) and a linear value head.

    The action distribution is `action_dist` (see `networks.distributions.from_space`), or a
    Categorical over `num_actions` when none is given; `dist` returns it for the agents. For a
    Categorical the policy output is the logits array itself.
    The value head uses gain 1.0. With `shared_torso=False` the value head gets its own copy
    of the torso, as is usual for small vector tasks (cleanrl's CartPole/MuJoCo agents), where
    the value loss would otherwise dominate the shared features.
    """

    @nn.compact
    def __call__(self, obs: Any) -> tuple[Any, jax.Array]:
        """Return (policy params, e.g. logits [B, num_actions]; value [B]), float32."""
        obs, mask = self._split_mask(obs)
        h = self.torso(obs)
        h_value = h if self.shared_torso else self.torso.clone(parent=self, name="value_torso")(obs)
        policy = self._masked(PolicyHead(self.dist, name="policy")(h), mask)
        # The auto-named Dense ("Dense_0") keeps the parameter names of existing checkpoints.
        return policy, _value_head(h_value)


class RecurrentActorCritic(_ActorCriticBase):
    """Torso -> LSTM core -> policy head and value head, on time-major sequences.

    The torso runs on all T*B observations at once, the core is scanned over T (with resets,
    networks/cores.py), and the heads run on all T*B core outputs at once. The state is a dict
    of LSTM states: {"policy": (c, h)} with a shared torso. With `shared_torso=False` the value
    branch is a whole second network, torso copy *and* its own core ({"policy", "value"}), so
    the value still has memory (a value without it could not predict returns that depend on
    what was seen earlier) while keeping the feed-forward meaning of the flag: no features are
    shared between policy and value.
    """

    lstm_size: int = 128

    def _branches(self) -> tuple[str, ...]:
        return ("policy",) if self.shared_torso else ("policy", "value")

    def initial_state(self, batch: int) -> dict[str, Any]:
        """The state at the start of an episode (zeros), for `batch` environments."""
        return {b: lstm_initial_state(batch, self.lstm_size)
                for b in self._branches()}

    @nn.compact
    def __call__(self, obs: Any, state: dict[str, Any], reset: jax.Array
                 ) -> tuple[tuple[Any, jax.Array], dict[str, Any]]:
        """obs [T, B, ...], state from `initial_state(B)` (or a previous call), reset [T, B]:
        True where an episode starts at that step (the state is zeroed before it).
        Returns ((policy params [T, B, ...], value [T, B]), state after the last step)."""
        lead = reset.shape
        chex.assert_rank(reset, 2)
        chex.assert_tree_shape_prefix(obs, lead)
        obs, mask = self._split_mask(obs)
        flat_obs = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), obs)

        def branch(name: str, torso: nn.Module) -> jax.Array:
            h = torso(flat_obs)
            h = h.reshape(lead + h.shape[1:])
            new_state[name], out = LSTMCore(self.lstm_size, name=f"{name}_core")(
                state[name], h, reset)
            return out.reshape((-1,) + out.shape[2:])

        new_state: dict[str, Any] = {}
        h = branch("policy", self.torso)
        h_value = h if self.shared_torso else branch(
            "value", self.torso.clone(parent=self, name="value_torso"))
        policy = PolicyHead(self.dist, name="policy")(h)
        value = _value_head(h_value)
        unflat = lambda x: x.reshape(lead + x.shape[1:])  # noqa: E731
        policy = self._masked(jax.tree.map(unflat, policy), mask)
        return (policy, unflat(value)), new_state
