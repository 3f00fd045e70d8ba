"""Anakin throughput: environment steps per second of the whole compiled update (acting, env
steps and the learner step) on 1 and more (faked) devices.

    python -m benchmarks.anakin_throughput [--env gymnax:CartPole-v1] [--num_envs 64]
        [--unroll_length 32] [--devices 1,2] [--fake_devices 2] [--seconds 10]
        [--updates_per_call 1] [--num_seeds 1,4,16,64] [--set agent.num_epochs=4 ...] [--json]

The agent, network and hyperparameters are experiments/configs/ppo_gymnax.py's (PPO, MLP
64x64), with `--set FIELD=VALUE` overrides (`--set env.episode_metrics=discount:mean` reduces
that info field over each game inside the update, as training does). Steps/s exclude
compilation: the update is compiled and run once before the clock starts; the clock stops after
the last update's results are on the host. Each row records the 1-minute load average at its
end (`load1`). `--fake_devices N` sets XLA_FLAGS before JAX is imported (library code never
does); `--json` prints one JSON object per row instead of the table.

benchmarks/throughput.py prints the same rows beside its Sebulba rows (its measures `anakin` and
`anakin_act`) through `measure_on`, which runs `measure` in this process when it has the
devices and otherwise (CPU) in a fresh process of this script with that many faked devices.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Sequence

from benchmarks.harness import layout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
_FORCE = re.compile(r"--xla_force_host_platform_device_count=\S*")


def measure(num_devices: int, *, env: str = "gymnax:CartPole-v1", num_envs: int = 64,
            unroll_length: int = 32, seconds: float = 10.0, updates_per_call: int = 1,
            sets: Sequence[str] = (), seed: int = 0, act_only: bool = False,
            num_seeds: int = 1) -> dict[str, float]:
    """Steps/s of Anakin PPO on `num_devices` local devices with `num_envs` envs in all.
    `sets`: "field=value" config overrides (benchmarks.harness.layout.set_field). `act_only`: the
    rollouts alone (policy + env steps, fixed parameters, no learning), the counterpart of
    benchmarks/throughput.py's env_infer. `num_seeds` > 1: that many agents in one program
    (anakin/population.py); steps/s are summed over them, and `peak_rss_mb` is this process's
    peak resident memory."""
    import resource

    import jax

    from anakin import actor, key_streams, population, topology, update_program
    from experiments import wiring
    from experiments.configs import ppo_gymnax
    from experiments.wiring import jax_envs
    from experiments.wiring.drivers import anakin as anakin_driver
    from experiments.wiring.drivers import anakin_population

    config = ppo_gymnax.get_config()
    config.env.name, config.num_envs, config.unroll_length = env, num_envs, unroll_length
    config.learner_device_ids = tuple(range(num_devices))
    config.seed, config.num_seeds = seed, num_seeds
    for assignment in sets:
        layout.set_field(config, assignment)
    # Read, checked and built as an Anakin run is (experiments/wiring/drivers/anakin.py).
    sections = wiring.read(config, devices=False, env_id=False)
    ac = sections.runtime
    e = jax_envs.make_env(sections.env)
    judged = anakin_driver.check_metrics(e, sections.env)  # --set env.episode_metrics=...
    mesh = topology.make_mesh(ac.learner_device_ids)
    example = jax.tree.map(lambda x: x[None], e.reset(jax.random.key(0)).obs)
    if num_seeds > 1:
        if act_only:
            raise SystemExit("--act_only measures one agent (--num_seeds 1).")
        network = wiring.build_network(sections, e.action_space, e.observation_space)
        pop = anakin_population.population(sections.spec, sections.agent, network,
                                           sections.shape, 10**6, sections.members)
        state, runner = population.place(*population.init(pop, e, example, 0, ac.num_envs,
                                                          len(judged)), mesh)
        fused = population.make_update_fn(pop, e, mesh, ac.unroll_length, updates_per_call,
                                          judged)
        hparams = pop.stacked_hparams()

        def update(state, runner):
            return fused(hparams, state, runner)
    else:
        _, _, agent = wiring.build_from_config(sections, e.action_space, num_updates=10**6,
                                               observation_space=e.observation_space)
        state = topology.place_replicated(agent.init(jax.random.key(seed), example), mesh)
        runner = topology.place_runner(actor.init_runner(
            agent, e, key_streams.runner_key(seed), ac.num_envs, len(judged)), mesh)
        update = update_program.make_update_fn(agent, e, mesh, ac.unroll_length,
                                               updates_per_call, judged)
        if act_only:
            update = _act_only_fn(agent, e, mesh, ac.unroll_length, updates_per_call, judged)
    t0 = time.perf_counter()
    state, runner, metrics, _ = update(state, runner)
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - t0
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state, runner, metrics, eps = update(state, runner)
        calls += 1
        jax.device_get((metrics, eps))  # as the training loop: metrics and games to the host
    elapsed = time.perf_counter() - start
    steps = calls * updates_per_call * ac.unroll_length * ac.num_envs * num_seeds
    return {"runtime": "anakin", "measure": "act_only" if act_only else "end_to_end",
            "env": env, "devices": num_devices, "num_envs": num_envs,
            "unroll_length": unroll_length, "updates_per_call": updates_per_call,
            "num_seeds": num_seeds, "episode_metrics": ",".join(m.name for m in judged),
            "sps": steps / elapsed,
            "update_s": elapsed / (calls * updates_per_call), "compile_s": compile_s,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "load1": os.getloadavg()[0]}


def _act_only_fn(agent, env, mesh, T: int, k: int, metrics=()):
    """update(state, runner) with the same signature, running k rollouts and no learning."""
    import jax
    from jax.sharding import PartitionSpec as P

    from anakin import actor, topology

    def per_device(state, runner):
        def body(r, _):
            r, ro, eps = actor.rollout(agent, env, agent.actor_params(state), r, T, metrics)
            return r, (ro.reward.sum(), eps)
        runner, (total, eps) = jax.lax.scan(body, runner, None, length=k)
        eps = jax.tree.map(lambda x: x.reshape((k * T, *x.shape[2:])), eps)
        return state, runner, {"reward": jax.lax.psum(total.sum(), topology.AXIS)}, eps
    return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P(topology.AXIS)),
                                 out_specs=(P(), P(topology.AXIS), P(), P(None, topology.AXIS)),
                                 check_vma=False), donate_argnums=1)


def measure_on(num_devices: int, **kwargs) -> dict[str, float]:
    """`measure(num_devices, **kwargs)` in this process when it has `num_devices` local
    devices; otherwise, on CPU, in a fresh process of this script with `num_devices` faked CPU
    devices (XLA reads XLA_FLAGS once, when JAX starts, so this process cannot add devices).
    The row's `process` says which ("this" or "subprocess")."""
    import jax
    if num_devices <= jax.local_device_count():
        return {**measure(num_devices, **kwargs), "process": "this"}
    if jax.default_backend() != "cpu":
        raise SystemExit(f"anakin: {num_devices} devices asked for, but this host has "
                         f"{jax.local_device_count()} {jax.default_backend()} device(s).")
    kw = dict(kwargs)
    argv = [sys.executable, "-m", "benchmarks.anakin_throughput", "--devices", str(num_devices),
            "--fake_devices", str(num_devices), "--json"]
    for flag in ("env", "num_envs", "unroll_length", "seconds", "updates_per_call", "seed",
                 "num_seeds"):
        if flag in kw:
            argv += [f"--{flag}", str(kw.pop(flag))]
    for assignment in kw.pop("sets", ()):
        argv += ["--set", assignment]
    if kw.pop("act_only", False):
        argv.append("--act_only")
    if kw:
        raise TypeError(f"measure_on: unknown arguments {sorted(kw)}")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"anakin on {num_devices} faked CPU devices (subprocess) failed with "
                           f"status {proc.returncode}:\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process": "subprocess"}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.anakin_throughput",
        description=__doc__.split("\n")[0])
    p.add_argument("--env", default="gymnax:CartPole-v1")
    p.add_argument("--num_envs", type=int, default=64, help="envs in all, split over devices")
    p.add_argument("--unroll_length", type=int, default=32)
    p.add_argument("--devices", default="1,2", help="comma-separated device counts to measure")
    p.add_argument("--fake_devices", type=int, default=0,
                   help="fake N CPU devices (XLA_FLAGS, set before JAX is imported)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--updates_per_call", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--act_only", action="store_true",
                   help="rollouts only (policy + env steps, no learning)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="config override, e.g. agent.num_epochs=2 (repeatable)")
    p.add_argument("--num_seeds", default="1",
                   help="agents in one program, comma-separated counts (each count beyond the "
                        "first runs in a fresh process: its peak memory is its own)")
    p.add_argument("--json", action="store_true", help="one JSON object per row, no table")
    args = p.parse_args(argv)
    try:
        seed_counts = [int(x) for x in args.num_seeds.split(",")]
    except ValueError:
        p.error(f"--num_seeds: {args.num_seeds!r} is not a comma-separated list of counts")
    try:
        counts = [int(x) for x in args.devices.split(",")]
    except ValueError:
        p.error(f"--devices: {args.devices!r} is not a comma-separated list of device counts")
    fake = args.fake_devices or max(counts)
    if fake > 1:
        # Replaces a device count already in XLA_FLAGS (XLA would not say which one wins).
        flags = _FORCE.sub("", os.environ.get("XLA_FLAGS", ""))
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={fake}".strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if not args.json:
        print(f"anakin {'act_only' if args.act_only else 'end_to_end'} on {args.env}, "
              f"{os.cpu_count()} CPUs")
        print(f"{'devices':>7} {'seeds':>5} {'envs':>5} {'T':>4} {'K':>3} {'steps/s':>12} "
              f"{'update ms':>10} {'compile s':>9} {'peak MB':>8} {'load1':>6}")
    rows = []
    for n in counts:
        for i, seeds in enumerate(seed_counts):
            kw = dict(env=args.env, num_envs=args.num_envs, unroll_length=args.unroll_length,
                      seconds=args.seconds, updates_per_call=args.updates_per_call,
                      sets=args.set, seed=args.seed, act_only=args.act_only, num_seeds=seeds)
            r = measure(n, **kw) if i == 0 else _fresh(n, fake, kw)
            rows.append(r)
            if args.json:
                print(json.dumps(r), flush=True)
                continue
            print(f"{n:>7} {seeds:>5} {r['num_envs']:>5} {r['unroll_length']:>4} "
                  f"{r['updates_per_call']:>3} {r['sps']:>12,.0f} {1e3 * r['update_s']:>10.2f} "
                  f"{r['compile_s']:>9.1f} {r['peak_rss_mb']:>8.0f} {r['load1']:>6.2f}",
                  flush=True)
    return rows


def _fresh(num_devices: int, fake: int, kw: dict) -> dict[str, float]:
    """`measure` in a fresh process (its peak memory is its own)."""
    argv = [sys.executable, "-m", "benchmarks.anakin_throughput", "--devices", str(num_devices),
            "--fake_devices", str(fake), "--json", "--num_seeds", str(kw.pop("num_seeds"))]
    for flag in ("env", "num_envs", "unroll_length", "seconds", "updates_per_call", "seed"):
        argv += [f"--{flag}", str(kw.pop(flag))]
    for assignment in kw.pop("sets"):
        argv += ["--set", assignment]
    if kw.pop("act_only"):
        argv.append("--act_only")
    proc = subprocess.run(argv, env={**os.environ, "JAX_PLATFORMS": "cpu"},
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"anakin_throughput subprocess failed ({proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
