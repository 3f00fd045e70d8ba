"""Exports a checkpoint's policy as a folder that acts without this library (jax and numpy only).

    python -m scripts.export runs/ppo-HalfCheetah-v4-s0-20261201-120000 --output exported/
    python -m scripts.export runs/<run> --checkpoint 4880 --sample
    python -m scripts.export runs/<population run> --member 2     # or runs/<run>/members/<name>

The folder holds:
- `policy.stablehlo`: the acting function serialised with `jax.export` (StableHLO, lowered for
  CPU, CUDA and TPU), batch-size polymorphic: `act(params, obs[, key]) -> action`, with
  everything between the env's observation and the env's action inside: the observation
  normalisation of the run (its statistics are parameters), the torso, the action head and its
  post-processing (greedy: the mode, continuous actions squashed or clipped to their bounds;
  `--sample`: a draw from the policy with the key given), Dict/Tuple actions as a dict/tuple;
- `params.npz`: the parameters, beside the function rather than folded into it as constants:
  a large network (an Atari ResNet) serialises in a moment, the weights stay readable with
  numpy, and one exported function serves any checkpoint of the same network;
- `policy.json`: the observation and action spaces, the inputs the function takes, the run's
  config, the checkpoint's update and env step, the member, and the library and jax versions;
- `load_policy.py`: a copy of scripts/policy_loader.py, the loader (jax and numpy only);
- with `--onnx`, `policy.onnx`: the same greedy acting function as an ONNX model (jax2onnx; the
  parameters inside as initializers, the batch dimension named `batch`), for runtimes that do
  not run JAX (onnxruntime in C++, C#, Java, the browser); `load(folder, runtime="onnxruntime")`
  runs it with onnxruntime and numpy only. An optional extra: `pip install --no-deps -r
  requirements-onnx.txt`.

Not inside: what the env does before its observation (EnvPool's frame stacking, resizing,
grayscale; a gymnasium wrapper's), which the serving code must do as the training env did.
A recurrent (LSTM) policy's core state is an input and an output, a flat list of [B, ...]
arrays: `act(params, obs, state[, key]) -> (action, state)`, the loader giving the zeros an
episode starts from. A user error (no checkpoint, a member missing, an op the ONNX converter
cannot lower, named) prints one line and exits with status 2. docs/deploy.md.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import logging
import os
import shutil
from importlib import metadata
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export

from experiments.wiring.user_modules import HELP as _IMPORT_HELP, import_modules
from networks import is_recurrent
from podracer import checkpoint
from podracer.evaluation import EVAL_SEED
from scripts import evaluate
from scripts import policy_loader

PLATFORMS = ("cpu", "cuda", "tpu")
FORMAT = 1  # policy.json's layout
ONNX_EXTRA = "pip install --no-deps -r requirements-onnx.txt"


def export(path: str, output: str, *, member: int | None = None, step: int | None = None,
           greedy: bool = True, platforms: Sequence[str] = PLATFORMS,
           imports: Sequence[str] = (), onnx: bool = False) -> str:
    """Writes the policy of the checkpoint at `path` (a run dir, its newest checkpoint; or a
    checkpoint dir; `step`: that update's checkpoint of the run) into `output`; returns it.
    `onnx`: also `policy.onnx` (greedy only). ValueError (one line for the command line) for
    a user error."""
    if onnx:
        _check_onnx(greedy)
    import_modules(imports)
    path, member_dir = evaluate.member_path(path)
    if step is not None:
        path = os.path.join(path, "checkpoints", str(step))
    ckpt = checkpoint.resolve(path)
    meta = checkpoint.load_metadata(ckpt)
    saved = checkpoint.config_from_metadata(meta)
    config, chosen, size = evaluate.pick_member(saved, member, member_dir)
    sections = evaluate.read_sections(config, meta)
    probe = evaluate.eval_envs(sections)(1, EVAL_SEED)
    obs = probe.reset()
    spaces = (probe.observation_space, probe.action_space)
    probe.close()
    network, agent, state = evaluate.load_agent_state(
        ckpt, sections, obs, spaces[1], None if chosen is None else chosen.index, size,
        spaces[0])
    leaves, treedef = jax.tree.flatten(agent.actor_params(state))
    recurrent = is_recurrent(network)
    # The core state travels as a flat list of [B, ...] arrays (the loader needs no tree);
    # an episode starts from zeros (networks/cores.py), which the loader makes.
    start, core_tree = jax.tree.flatten(network.initial_state(1) if recurrent else None)
    if any(np.any(np.asarray(x) != 0) for x in start):
        raise ValueError(f"{ckpt}: the network's initial core state is not zeros; the "
                         f"loader starts episodes from zeros.")
    act = acting_function(agent, treedef, core_tree if recurrent else None, greedy)

    batch, = jax_export.symbolic_shape("batch")

    def batched(x):
        return jax.ShapeDtypeStruct((batch, *np.shape(x)[1:]), np.asarray(x).dtype)
    specs = [[jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in leaves],
             jax.tree.map(batched, obs)]
    if recurrent:
        specs.append([batched(x) for x in start])
    if not greedy:
        specs.append(jax.ShapeDtypeStruct((2,), jnp.uint32))  # threefry key data
    exported = jax_export.export(jax.jit(act), platforms=tuple(platforms))(*specs)
    # Converted before anything is written: a policy the converter cannot lower leaves no
    # half-made folder behind.
    onnx_model = onnx_model_of(act, leaves, obs, start if recurrent else None) if onnx else None

    os.makedirs(output, exist_ok=True)
    if onnx_model is not None:
        model, onnx_spec = onnx_model
        with open(os.path.join(output, "policy.onnx"), "wb") as f:
            f.write(model.SerializeToString())
    with open(os.path.join(output, "policy.stablehlo"), "wb") as f:
        f.write(exported.serialize())
    np.savez(os.path.join(output, "params.npz"),
             **{f"{i:05d}": np.asarray(x) for i, x in enumerate(leaves)})
    shutil.copyfile(policy_loader.__file__, os.path.join(output, "load_policy.py"))
    spec = {
        "format": FORMAT, "policy": "greedy" if greedy else "sample", "recurrent": recurrent,
        "platforms": list(platforms),
        "inputs": {"observation": _inputs(obs),
                   **({"state": [_inputs(x) for x in start]} if recurrent else {}),
                   **({} if greedy else {"key": {"shape": [2], "dtype": "uint32"}})},
        "observation_space": space_json(spaces[0]), "action_space": space_json(spaces[1]),
        "checkpoint": ckpt, "update": int(meta["updates"]), "env_steps": int(meta["env_steps"]),
        "member": None if chosen is None else {"index": chosen.index, "name": chosen.name},
        "env": sections.env.name, "versions": _versions(),
        **({"onnx": onnx_spec} if onnx_model is not None else {}),
        "config": json.loads(config.to_json())}
    with open(os.path.join(output, "policy.json"), "w") as f:
        json.dump(spec, f, indent=2)
    return output


def _check_onnx(greedy: bool) -> None:
    """The early errors of `--onnx`: the extra missing, a sampling policy."""
    if not greedy:
        raise ValueError("--onnx exports the greedy policy only: jax2onnx cannot lower "
                         "jax.random's draw for a batch of any size; drop --sample (the "
                         "StableHLO export samples).")
    missing = [m for m in ("jax2onnx", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        raise ValueError(f"--onnx needs {' and '.join(missing)}, not installed: "
                         f"{ONNX_EXTRA} (docs/deploy.md).")


def acting_function(agent: Any, treedef: Any, core_tree: Any, greedy: bool):
    """`act(params, obs[, state][, key]) -> action` (recurrent: `(action, state)`): the
    agent's greedy step (or actor step, with `key` as threefry key data) on the actor
    parameters' leaves `params` (`treedef`'s) and the core state as a flat list (`core_tree`'s;
    None for a feed-forward network)."""
    recurrent = core_tree is not None

    def act(params, observation, *rest):
        ap = jax.tree.unflatten(treedef, params)
        core = jax.tree.unflatten(core_tree, rest[0]) if recurrent else None
        key = None if greedy else jax.random.wrap_key_data(rest[-1])
        if greedy and recurrent:
            action, core = agent.greedy_step(ap, observation, core)
        elif greedy:
            action = agent.greedy_step(ap, observation)
        elif recurrent:
            action, _, core = agent.actor_step(ap, observation, key, core)
        else:
            action, _ = agent.actor_step(ap, observation, key)
        return (action, jax.tree.leaves(core)) if recurrent else action
    return act


def onnx_model_of(act, leaves: list, obs: Any, start: list | None) -> tuple[Any, dict]:
    """(the ONNX model of the greedy `act` with the parameters `leaves` folded in, the
    `onnx` entry of policy.json naming its inputs and outputs). The inputs are the
    observation's leaves then the core state's, the outputs the action's leaves then the new
    core state's, each with the batch dimension `batch`; a leaf's `path` is its place in the
    observation or action (dict keys, tuple indices)."""
    obs_paths, obs_leaves, obs_tree = _with_paths(obs)
    state = list(start or [])
    # The action's structure from shapes alone: no eager run of the network.
    example = jax.eval_shape(act, leaves, obs, *([state] if start is not None else []))
    action_paths, _, _ = _with_paths(example[0] if start is not None else example)

    def greedy(*inputs):
        observation = jax.tree.unflatten(obs_tree, inputs[:len(obs_leaves)])
        if start is None:
            return tuple(jax.tree.leaves(act(leaves, observation)))
        action, core = act(leaves, observation, list(inputs[len(obs_leaves):]))
        return (*jax.tree.leaves(action), *core)

    def name(prefix, path):
        return ".".join([prefix, *map(str, path)])
    # JAX computes in 32 bits unless x64 is on: an int64 entry (a Discrete observation) is an
    # int32 input of the model, and the loader casts to the dtype named here.
    specs = [jax.ShapeDtypeStruct(("batch", *np.shape(x)[1:]),
                                  jax.dtypes.canonicalize_dtype(np.asarray(x).dtype))
             for x in [*obs_leaves, *state]]
    dtypes = [str(np.dtype(x.dtype)) for x in specs]
    inputs = [{"name": name("observation", p), "path": p} for p in obs_paths]
    inputs += [{"name": f"state.{i}"} for i in range(len(state))]
    for entry, dtype in zip(inputs, dtypes):
        entry["dtype"] = dtype
    outputs = [{"name": name("action", p), "path": p} for p in action_paths]
    outputs += [{"name": f"next_state.{i}"} for i in range(len(state))]
    try:
        with _quiet("jax2onnx", "onnx_ir"):
            import jax2onnx
            model = jax2onnx.to_onnx(greedy, specs, model_name="policy",
                                     input_names=[i["name"] for i in inputs],
                                     output_names=[o["name"] for o in outputs])
    except NotImplementedError as e:  # jax2onnx names the primitive it has no lowering for
        raise ValueError(f"--onnx: jax2onnx {metadata.version('jax2onnx')} cannot convert "
                         f"this policy: {e}") from e
    return model, {"file": "policy.onnx", "opset": _opset(model), "inputs": inputs,
                   "outputs": outputs,
                   "converter": f"jax2onnx {metadata.version('jax2onnx')}"}


@contextlib.contextmanager
def _quiet(*names: str):
    """The loggers `names` at ERROR for the block: jax2onnx logs, each with a traceback, the
    plugins for other libraries (equinox, dm_pix) it cannot import, and onnx_ir each
    intermediate value it leaves untyped; neither bears on the model written."""
    loggers = [logging.getLogger(n) for n in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _with_paths(tree: Any) -> tuple[list[list], list, Any]:
    """(each leaf's path as a list of dict keys and sequence indices, the leaves, the
    treedef): the path of a bare array is []."""
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    paths = [[getattr(k, "key", getattr(k, "idx", None)) for k in path] for path, _ in flat]
    return paths, [x for _, x in flat], treedef


def _opset(model: Any) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _inputs(obs: Any) -> dict:
    """The observation's shapes (batch first, `null`) and dtypes, as the function takes it."""
    def one(x):
        x = np.asarray(x)
        return {"shape": [None, *x.shape[1:]], "dtype": str(x.dtype)}
    if isinstance(obs, dict):
        return {k: one(v) for k, v in obs.items()}
    return one(obs)


def space_json(space: Any) -> dict:
    """A gymnasium space as JSON (bounds as lists; infinities as JSON's Infinity)."""
    from gymnasium import spaces
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": np.asarray(space.nvec).tolist()}
    if isinstance(space, spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "low": np.asarray(space.low, float).tolist(),
                "high": np.asarray(space.high, float).tolist()}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_json(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_json(s) for s in space.spaces]}
    return {"type": type(space).__name__, "repr": repr(space)}


def _versions() -> dict:
    out = {"jax": jax.__version__}
    try:
        out["sebulba-rl"] = metadata.version("sebulba-rl")
    except metadata.PackageNotFoundError:
        out["sebulba-rl"] = "not installed (a checkout)"
    return out


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(prog="python -m scripts.export",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="a run dir (its newest checkpoint), a checkpoint dir, or a "
                   "population member's run dir")
    p.add_argument("--output", default="", help="the folder to write (default: "
                   "<run_dir>/export/update<N>-<policy>)")
    p.add_argument("--checkpoint", type=int, default=None, metavar="N",
                   help="the run's checkpoint of update N (default: the newest)")
    p.add_argument("--member", type=int, default=None, metavar="I",
                   help="member I of a population checkpoint (num_seeds, vary)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--greedy", dest="greedy", action="store_true", default=True,
                      help="the mode of the action distribution (default)")
    kind.add_argument("--sample", dest="greedy", action="store_false",
                      help="a draw from the policy; the function then takes a key")
    p.add_argument("--platforms", default=",".join(PLATFORMS),
                   help="the platforms to lower for, comma-separated")
    p.add_argument("--onnx", action="store_true",
                   help="also write policy.onnx, the greedy policy as an ONNX model "
                   f"(jax2onnx: {ONNX_EXTRA})")
    p.add_argument("--import", dest="imports", action="append", default=[],
                   help=_IMPORT_HELP)
    p.add_argument("--verbose", action="store_true", help="show a user error's traceback")
    args = p.parse_args(argv)
    output = args.output
    try:
        if not output:
            run_dir = evaluate.member_path(args.path)[0]
            meta = checkpoint.load_metadata(checkpoint.resolve(
                run_dir if args.checkpoint is None
                else os.path.join(run_dir, "checkpoints", str(args.checkpoint))))
            output = os.path.join(run_dir, "export", f"update{meta['updates']}-"
                                  f"{'greedy' if args.greedy else 'sample'}"
                                  + (f"-member{args.member}" if args.member is not None
                                     else ""))
        export(args.path, output, member=args.member, step=args.checkpoint,
               greedy=args.greedy, platforms=[s for s in args.platforms.split(",") if s],
               imports=args.imports, onnx=args.onnx)
    except evaluate.USER_ERRORS as e:
        if args.verbose:
            raise
        p.exit(2, f"error: {e}\n")
    print(f"exported: {output} (policy.stablehlo, params.npz, policy.json, load_policy.py"
          f"{', policy.onnx' if args.onnx else ''})")
    return output


if __name__ == "__main__":
    main()
