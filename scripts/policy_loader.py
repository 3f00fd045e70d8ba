"""Runs a policy exported by `python -m scripts.export`: needs only jax and numpy, or (the
ONNX model of an export made with `--onnx`) only onnxruntime and numpy.

Copy this file next to your code (the export writes a copy into its folder as
`load_policy.py`), then:

    policy = load("exported/")                  # policy.json, policy.stablehlo, params.npz
    policy = load("exported/", runtime="onnxruntime")   # policy.onnx; the same calls
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
`policy.spec` (policy.json). Both runtimes take and return the same things; the ONNX model is
the greedy policy (an export with `--sample` has none).
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

RUNTIMES = ("jax", "onnxruntime")


class Policy:
    """An exported policy: `policy(obs, state=None, key=None) -> (action, state)`, run by
    `runtime`: "jax" (policy.stablehlo with params.npz) or "onnxruntime" (policy.onnx;
    `providers`: onnxruntime's execution providers, default its own choice)."""

    def __init__(self, folder: str, runtime: str = "jax", providers: Any = None) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime={runtime!r}: expected one of {RUNTIMES}.")
        with open(os.path.join(folder, "policy.json")) as f:
            self.spec = json.load(f)
        self.sample = self.spec["policy"] == "sample"
        self.runtime = runtime
        if runtime == "jax":
            self._run = _jax_runner(folder, self.spec)
        else:
            self._run = _onnx_runner(folder, self.spec, providers)

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
        obs = self._observation(obs)
        if self.spec["recurrent"]:
            if state is None:
                first = next(iter(obs.values())) if isinstance(obs, dict) else obs
                state = self.initial_state(len(first))
            state = [np.asarray(s) for s in state]
        if self.sample and key is None:
            raise ValueError("this policy samples its actions: pass key= (an int seed, "
                             "or key data as from jax.random.key_data).")
        action, state = self._run(obs, state, key)
        return action, (state if self.spec["recurrent"] else None)

    def _observation(self, obs: Any) -> Any:
        """`obs` cast to the dtypes the policy was exported for (as the env gives them)."""
        spec = self.spec["inputs"]["observation"]
        if "dtype" in spec:
            return np.asarray(obs, spec["dtype"])
        missing = sorted(set(spec) - set(obs))
        if missing:
            raise ValueError(f"the observation lacks entries {missing}; it has {sorted(obs)}.")
        return {k: np.asarray(obs[k], s["dtype"]) for k, s in spec.items()}


def _jax_runner(folder: str, spec: dict):
    """`run(obs, state, key) -> (action, state)` through policy.stablehlo (jax.export)."""
    import jax
    from jax import export
    with open(os.path.join(folder, "policy.stablehlo"), "rb") as f:
        call = jax.jit(export.deserialize(bytearray(f.read())).call)
    with np.load(os.path.join(folder, "params.npz")) as saved:
        params = [jax.numpy.asarray(saved[k]) for k in sorted(saved.files)]

    def run(obs, state, key):
        args = [params, obs]
        if spec["recurrent"]:
            args.append(state)
        if spec["policy"] == "sample":
            args.append(np.asarray(jax.random.key_data(jax.random.key(key))
                                   if isinstance(key, (int, np.integer)) else key, np.uint32))
        out = call(*args)
        action, state = out if spec["recurrent"] else (out, None)
        return (jax.tree.map(np.asarray, action),
                None if state is None else [np.asarray(s) for s in state])
    return run


def _onnx_runner(folder: str, spec: dict, providers: Any):
    """`run(obs, state, key) -> (action, state)` through policy.onnx (onnxruntime)."""
    if "onnx" not in spec:
        raise ValueError(f"{folder} has no ONNX model: export it with --onnx (the greedy "
                         f"policy; a --sample export has none).")
    import onnxruntime
    session = onnxruntime.InferenceSession(os.path.join(folder, spec["onnx"]["file"]),
                                           providers=providers)
    inputs, outputs = spec["onnx"]["inputs"], spec["onnx"]["outputs"]
    observation = [i for i in inputs if "path" in i]
    core = [i for i in inputs if "path" not in i]  # the core state's
    names = [o["name"] for o in outputs]
    num_action = sum(1 for o in outputs if "path" in o)

    def run(obs, state, key):
        # The model's dtypes: 32-bit integers where the env gives 64 (JAX computes in 32).
        feed = {i["name"]: np.asarray(_at(obs, i["path"]), i["dtype"]) for i in observation}
        feed.update({i["name"]: np.asarray(s, i["dtype"]) for i, s in zip(core, state or [])})
        values = session.run(names, feed)
        action = _nest([o["path"] for o in outputs[:num_action]], values[:num_action])
        return action, values[num_action:]
    return run


def _at(tree: Any, path: list) -> Any:
    for k in path:
        tree = tree[k]
    return tree


def _nest(paths: list[list], leaves: list) -> Any:
    """The leaves put back at their paths: dicts for keys, tuples for indices ([]: a bare
    array)."""
    if paths == [[]]:
        return leaves[0]
    groups: dict = {}
    for path, leaf in zip(paths, leaves):
        groups.setdefault(path[0], ([], []))
        groups[path[0]][0].append(path[1:])
        groups[path[0]][1].append(leaf)
    nested = {k: _nest(*group) for k, group in groups.items()}
    if all(isinstance(k, int) for k in nested):
        return tuple(nested[i] for i in sorted(nested))
    return nested


def load(folder: str, runtime: str = "jax", providers: Any = None) -> Policy:
    """The policy exported into `folder`, run by `runtime` ("jax" or "onnxruntime")."""
    return Policy(folder, runtime, providers)
