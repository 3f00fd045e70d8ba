"""This project's Anakin PPO beside purejaxrl's `ppo.py`, end to end, in one run of this script:
the two programs alternate (purejaxrl, then each of ours, round after round), so a shared
machine's load falls on both alike, and the table gives each round's ratio.

    git clone https://github.com/luchris429/purejaxrl /tmp/purejaxrl   # stays outside the repo
    python -m benchmarks.peers.purejaxrl --purejaxrl /tmp/purejaxrl/purejaxrl \\
        [--setting cartpole|minatar-breakout] [--num_seeds 1] [--updates_per_call 1,16] \\
        [--rounds 2] [--steps N] [--json results.jsonl] [--program_only] [--peer_qr_free_init]

Settings (purejaxrl's own; ours set field by field to the same values):
- cartpole: purejaxrl's `ppo.py` CartPole config: 4 envs x 128 steps, 4 epochs x 4 minibatches
  of 128 shuffled steps, Adam 2.5e-4 annealed, clip 0.2 (policy and value), entropy 0.01,
  grad norm 0.5, MLP 64x64 tanh, 500k steps. Ours: experiments/configs/ppo_gymnax.py with
  those values (`_ours_command`).
- minatar-breakout: purejaxrl's MinAtar config (examples/brax_minatar.ipynb: 64 envs x 128,
  4 epochs x 8 minibatches, lr 5e-3, ReLU) on gymnax's Breakout-MinAtar; ours:
  experiments/configs/ppo_minatar.py:purejaxrl (tests/experiments/test_reference_settings.py
  checks it field by field). 1M steps unless --steps.

What is timed:
- purejaxrl: its whole training is one `jit` (`jax.vmap` over seeds when --num_seeds > 1);
  compilation (`lower().compile()`) is timed apart, then the run, to the results on the host.
- ours: `python experiments/ppo_gymnax.py` as a user runs it, with `--config.num_seeds` and
  `--config.updates_per_call`; the steady rate between its first and last metrics rows (so
  compilation and start-up are excluded; they are given as the time to the first row).
  Checkpoints are off (`checkpoint_every_minutes=0`, `checkpoint_keep=0`).
Both report the summed steps/s over seeds.

`--program_only` (cartpole): ours as the compiled update alone, called back to back
(`benchmarks/anakin_throughput.py` with the setting's fields: no logging, no per-update host
work beyond copying each call's metrics back), beside the same purejaxrl run: where the
end-to-end gap is the program's and where it is the loop's.

purejaxrl's `wrappers.py` reads gymnax's pre-1.0 five-value `step`; gymnax 1.0 returns six
(terminated and truncated apart). The peer process wraps `gymnax.make`'s envs so `step` returns
five values with `done = terminated or truncated` (purejaxrl's own semantics); purejaxrl's
files are not modified.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SETTINGS = {
    "cartpole": {
        "purejaxrl": {"LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 5e5,
                      "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 4, "GAMMA": 0.99,
                      "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
                      "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh", "ENV_NAME": "CartPole-v1",
                      "ANNEAL_LR": True, "DEBUG": False},
        "ours": ["--config=experiments/configs/ppo_gymnax.py",
                 "--config.env.name=gymnax:CartPole-v1", "--config.num_envs=4",
                 "--config.unroll_length=128", "--config.agent.num_epochs=4",
                 "--config.agent.num_minibatches=4", "--config.agent.minibatch_axis=sample",
                 "--config.agent.learning_rate=2.5e-4", "--config.agent.clip_eps=0.2",
                 "--config.agent.value_clip_eps=0.2", "--config.agent.entropy_cost=0.01",
                 "--config.agent.max_grad_norm=0.5",
                 "--config.agent.bootstrap_truncation=False"],
        "steps": 500_000,
    },
    "minatar-breakout": {
        "purejaxrl": {"LR": 5e-3, "NUM_ENVS": 64, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 1e6,
                      "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 8, "GAMMA": 0.99,
                      "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
                      "MAX_GRAD_NORM": 0.5, "ACTIVATION": "relu",
                      "ENV_NAME": "Breakout-MinAtar", "ANNEAL_LR": True, "DEBUG": False},
        "ours": ["--config=experiments/configs/ppo_minatar.py:purejaxrl",
                 "--config.env.name=gymnax:Breakout-MinAtar"],
        "steps": 1_000_000,
    },
}


def run_peer(purejaxrl_dir: str, config: dict, num_seeds: int,
             qr_free_init: bool = False) -> dict:
    """(In the peer's own process.) purejaxrl's make_train(config), jitted whole, over
    `num_seeds` seeds; compile and run times, steps/s summed over seeds, final return.
    `qr_free_init`: purejaxrl's orthogonal initialiser replaced by a variance-scaling one of the
    same scale (initial values only; the training program is otherwise the same): XLA:CPU can
    hang in the QR of a vmapped orthogonal init
    (docs/journal/2026-12-03-anakin-beside-purejaxrl-how-it-got-there.md, "Sixteen seeds")."""
    import gymnax
    import jax
    import jax.numpy as jnp

    make = gymnax.make

    class FiveValueStep:
        """gymnax 1.0's env with the pre-1.0 `step`: done = terminated or truncated."""

        def __init__(self, env):
            self._env = env

        def __getattr__(self, name):
            return getattr(self._env, name)

        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = self._env.step(
                key, state, action, params)
            return obs, state, reward, jnp.logical_or(terminated, truncated), info

    def make_five(*args, **kwargs):
        env, params = make(*args, **kwargs)
        return FiveValueStep(env), params

    gymnax.make = make_five
    sys.path.insert(0, purejaxrl_dir)
    import ppo  # purejaxrl/ppo.py

    if qr_free_init:  # ppo.py calls its module-level `orthogonal(scale)` inside the network
        from flax.linen import initializers
        ppo.orthogonal = lambda scale=1.0: initializers.variance_scaling(
            scale ** 2, "fan_avg", "normal")

    train = ppo.make_train(config)
    keys = jax.random.split(jax.random.PRNGKey(0), num_seeds)
    fn = jax.jit(jax.vmap(train))
    t0 = time.perf_counter()
    compiled = fn.lower(keys).compile()
    t1 = time.perf_counter()
    out = jax.block_until_ready(compiled(keys))
    t2 = time.perf_counter()
    per_update = config["NUM_ENVS"] * config["NUM_STEPS"]
    steps = int(config["TOTAL_TIMESTEPS"]) // per_update * per_update * num_seeds
    returns = out["metrics"]["returned_episode_returns"]
    return {"program": "purejaxrl", "compile_s": t1 - t0, "run_s": t2 - t1,
            "sps": steps / (t2 - t1), "steps": steps,
            "final_return": float(returns[:, -1].mean())}


def _ours_command(setting: str, steps: int, num_seeds: int, k: int, run_dir: str) -> list[str]:
    return [sys.executable, os.path.join(REPO, "experiments", "ppo_gymnax.py"),
            *SETTINGS[setting]["ours"], f"--config.total_env_steps={steps}",
            f"--config.num_seeds={num_seeds}", f"--config.updates_per_call={k}",
            f"--config.run_dir={run_dir}", "--config.checkpoint_every_minutes=0",
            "--config.checkpoint_keep=0", "--config.console_every_s=1e9"]


def _as_sets(setting: str) -> list[str]:
    """The setting's `--config.field=value` overrides as anakin_throughput's `--set`s (the base
    config is ppo_gymnax.py there, as in the cartpole setting)."""
    flags = SETTINGS[setting]["ours"]
    if flags[0] != "--config=experiments/configs/ppo_gymnax.py":
        raise SystemExit(f"--program_only measures ppo_gymnax.py's program; --setting {setting} "
                         f"uses {flags[0]}: allowed: cartpole.")
    return [f.removeprefix("--config.") for f in flags[1:]]


def run_program(setting: str, seconds: float, num_seeds: int, k: int) -> dict:
    """Ours as the compiled update alone, back to back, for `seconds` (anakin_throughput)."""
    fields = dict(s.split("=", 1) for s in _as_sets(setting))
    own = {"env.name": "--env", "num_envs": "--num_envs", "unroll_length": "--unroll_length"}
    argv = [sys.executable, "-m", "benchmarks.anakin_throughput", "--devices",
            "1", "--json", "--updates_per_call", str(k), "--seconds", str(seconds),
            "--num_seeds", str(num_seeds)]
    for name, value in fields.items():  # the benchmark's own flags, the rest as --set
        argv += [own[name], value] if name in own else ["--set", f"{name}={value}"]
    proc = subprocess.run(argv, check=True, text=True, capture_output=True, cwd=REPO)
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"program": f"program K={k}", "sps": row["sps"], "compile_s": row["compile_s"],
            "final_return": float("nan")}


def run_ours(setting: str, steps: int, num_seeds: int, k: int) -> dict:
    """`experiments/ppo_gymnax.py` in a fresh process: the steady steps/s between its first
    and last metrics rows (member 0's rows times the members), the time to the first row."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run")
        start = time.time()
        subprocess.run(_ours_command(setting, steps, num_seeds, k, run_dir), cwd=REPO,
                       check=True, stdout=subprocess.DEVNULL)
        member = run_dir
        if num_seeds > 1:  # members/00-s0, members/01-s1, ... (experiments/wiring/members.py)
            members = os.path.join(run_dir, "members")
            member = os.path.join(members, sorted(os.listdir(members))[0])
        with open(os.path.join(member, "metrics.jsonl")) as f:
            rows = [r for r in map(json.loads, f) if "sps" in r]
    first, last = rows[0], rows[-1]
    rate = (last["step"] - first["step"]) / (last["time"] - first["time"])
    return {"program": f"ours K={k}", "first_row_s": first["time"] - start,
            "sps": rate * num_seeds, "steps": int(last["step"]) * num_seeds,
            "final_return": last.get("episode/return_mean")}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.peers.purejaxrl",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--purejaxrl", required=True,
                   help="purejaxrl's package folder (the one holding ppo.py and wrappers.py)")
    p.add_argument("--setting", choices=sorted(SETTINGS), default="cartpole")
    p.add_argument("--num_seeds", type=int, default=1)
    p.add_argument("--updates_per_call", default="1,16",
                   help="ours: comma-separated K values, each run every round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=0, help="per seed; 0: the setting's")
    p.add_argument("--json", default="", help="append one JSON object per run to this file")
    p.add_argument("--program_only", action="store_true",
                   help="ours: the compiled update alone, back to back (cartpole)")
    p.add_argument("--peer_qr_free_init", action="store_true",
                   help="purejaxrl with a variance-scaling init in place of its orthogonal "
                        "one (initial values only): XLA:CPU can hang in the vmapped QR with "
                        "--num_seeds > 1")
    p.add_argument("--_peer", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not os.path.isfile(os.path.join(args.purejaxrl, "ppo.py")):
        p.error(f"--purejaxrl {args.purejaxrl!r} has no ppo.py: give purejaxrl's package "
                f"folder (the repository's purejaxrl/ subfolder).")
    if args.num_seeds < 1 or args.rounds < 1:
        p.error("--num_seeds and --rounds must be positive.")
    ks = [int(k) for k in args.updates_per_call.split(",")]
    setting = SETTINGS[args.setting]
    steps = args.steps or setting["steps"]
    if args.program_only:
        _as_sets(args.setting)  # refuses a setting it cannot measure, before any run
    peer_config = dict(setting["purejaxrl"], TOTAL_TIMESTEPS=float(steps))
    if args._peer:
        print(json.dumps(run_peer(args.purejaxrl, peer_config, args.num_seeds,
                                  args.peer_qr_free_init)))
        return
    rows = []
    for r in range(args.rounds):
        own_args = sys.argv[1:] if argv is None else list(argv)
        peer = subprocess.run(
            [sys.executable, "-m", "benchmarks.peers.purejaxrl", *own_args, "--_peer"],
            check=True, text=True, capture_output=True, cwd=REPO)
        base = json.loads(peer.stdout.strip().splitlines()[-1])
        base["qr_free_init"] = args.peer_qr_free_init
        if args.program_only:  # as long as purejaxrl's run took
            batch = [base] + [run_program(args.setting, max(base["run_s"], 2.0),
                                          args.num_seeds, k) for k in ks]
        else:
            batch = [base] + [run_ours(args.setting, steps, args.num_seeds, k) for k in ks]
        for row in batch:
            row.update(round=r, setting=args.setting, num_seeds=args.num_seeds,
                       ratio=row["sps"] / base["sps"], load1=os.getloadavg()[0])
            rows.append(row)
            print(f"round {r}  {row['program']:<11} {row['sps']:>10,.0f} steps/s  "
                  f"x{row['ratio']:.2f}  " + (f"compile {row['compile_s']:.1f}s"
                                              if "compile_s" in row else
                                              f"first row {row['first_row_s']:.1f}s")
                  + f"  return {row['final_return']:.1f}  load {row['load1']:.1f}",
                  flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
