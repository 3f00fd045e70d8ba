"""Runs a policy exported by `python -m scripts.export`: needs only jax and numpy.

Copy this file next to your code (the export writes a copy into its folder as
`load_policy.py`), then:

    policy = load("exported/")                  # policy.json, policy.stablehlo, params.npz
    state = policy.initial_state(batch)          # None for a feed-forward policy
    action, state = policy(obs, state)           # greedy export; obs as the env gives it
    action, state = policy(obs, state, key=seed) # sampling export: an int seed or key data
    state = policy.reset(state, new_episode)     # [B] bools: rows whose episode starts now

`obs` is a batch: an array [B, ...] (or a dict of them, as the env's observation space) of
any batch size B; `action` is a numpy array [B, ...] (a dict or tuple of arrays for Dict or
Tuple action spaces). `state` is the recurrent core's state (a list of [B, ...] arrays; None
for feed-forward policies): pass it back on the next call, and reset the rows of envs whose
new episode's first observation this is (with EnvPool's auto-reset: the observation after the
reset step that follows a game's end). The spaces, the run's config and the checkpoint are in
`policy.spec` (policy.json).
"""
from __future__ import annotations

import json
import os
from typing import Any

import jax
import numpy as np
from jax import export


class Policy:
    """An exported policy: `policy(obs, state=None, key=None) -> (action, state)`."""

    def __init__(self, folder: str) -> None:
        with open(os.path.join(folder, "policy.json")) as f:
            self.spec = json.load(f)
        with open(os.path.join(folder, "policy.stablehlo"), "rb") as f:
            self._exported = export.deserialize(bytearray(f.read()))
        with np.load(os.path.join(folder, "params.npz")) as saved:
            self._params = [jax.numpy.asarray(saved[k]) for k in sorted(saved.files)]
        self.sample = self.spec["policy"] == "sample"
        self._call = jax.jit(self._exported.call)

    def initial_state(self, batch: int) -> Any:
        """The recurrent core's state at the start of an episode (zeros); None when
        feed-forward."""
        if not self.spec["recurrent"]:
            return None
        return [np.zeros((batch, *s["shape"][1:]), s["dtype"])
                for s in self.spec["inputs"]["state"]]

    def reset(self, state: Any, new_episode: Any) -> Any:
        """`state` with the rows where `new_episode` ([B] bools) is set back at the start."""
        if state is None:
            return None
        rows = np.asarray(new_episode, bool)
        return [np.where(rows.reshape(-1, *(1,) * (np.ndim(s) - 1)), 0, s) for s in state]

    def __call__(self, obs: Any, state: Any = None, key: Any = None) -> tuple[Any, Any]:
        args = [self._params, self._observation(obs)]
        if self.spec["recurrent"]:
            if state is None:
                state = self.initial_state(len(jax.tree.leaves(args[1])[0]))
            args.append([np.asarray(s) for s in state])
        if self.sample:
            if key is None:
                raise ValueError("this policy samples its actions: pass key= (an int seed, "
                                 "or key data as from jax.random.key_data).")
            args.append(np.asarray(jax.random.key_data(jax.random.key(key))
                                   if isinstance(key, (int, np.integer)) else key, np.uint32))
        out = self._call(*args)
        if self.spec["recurrent"]:
            action, state = out
            return jax.tree.map(np.asarray, action), [np.asarray(s) for s in state]
        return jax.tree.map(np.asarray, out), state

    def _observation(self, obs: Any) -> Any:
        """`obs` cast to the dtypes the policy was exported for (as the env gives them)."""
        spec = self.spec["inputs"]["observation"]
        if "dtype" in spec:
            return np.asarray(obs, spec["dtype"])
        missing = sorted(set(spec) - set(obs))
        if missing:
            raise ValueError(f"the observation lacks entries {missing}; it has {sorted(obs)}.")
        return {k: np.asarray(obs[k], s["dtype"]) for k, s in spec.items()}


def load(folder: str) -> Policy:
    """The policy exported into `folder`."""
    return Policy(folder)
