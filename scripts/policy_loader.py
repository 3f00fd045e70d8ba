"""Runs a policy exported by `python -m scripts.export`: needs only jax and numpy.

Copy this file next to your code (the export writes a copy into its folder as
`load_policy.py`), then:

    policy = load("exported/")                  # policy.json, policy.stablehlo, params.npz
    action, state = policy(obs)                  # greedy export; obs as the env gives it
    action, state = policy(obs, key=step_seed)   # sampling export: an int seed or key data

`obs` is a batch: an array [B, ...] (or a dict of them, as the env's observation space) of
any batch size B; `action` is a numpy array [B, ...] (a dict or tuple of arrays for Dict or
Tuple action spaces). `state` is the recurrent core's state (None for feed-forward policies);
pass it back on the next call. The spaces, the run's config and the checkpoint are in
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
        """The recurrent core's state at the start of an episode; None when feed-forward."""
        return None

    def __call__(self, obs: Any, state: Any = None, key: Any = None) -> tuple[Any, Any]:
        args = [self._params, self._observation(obs)]
        if self.sample:
            if key is None:
                raise ValueError("this policy samples its actions: pass key= (an int seed, "
                                 "or key data as from jax.random.key_data).")
            args.append(np.asarray(jax.random.key_data(jax.random.key(key))
                                   if isinstance(key, (int, np.integer)) else key, np.uint32))
        action = self._call(*args)
        return jax.tree.map(np.asarray, action), state

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
