"""Anakin throughput: environment steps per second of the whole compiled update (acting, env
steps and the learner step) on 1 and more (faked) devices.

    python scripts/anakin_benchmark.py [--env gymnax:CartPole-v1] [--num_envs 64]
        [--unroll_length 32] [--devices 1,2] [--fake_devices 2] [--seconds 10]
        [--updates_per_call 1] [--set agent.num_epochs=4 ...]

The agent, network and hyperparameters are experiments/configs/ppo_gymnax.py's (PPO, MLP
64x64), with `--set FIELD=VALUE` overrides. `measure(...)` is the importable measurement
(one row per device count) for scripts/benchmark.py. Steps/s exclude compilation: the update
is compiled and run once before the clock starts; the clock stops after the last update's
results are on the host. Each row records the 1-minute load average at its end (`load1`).
`--fake_devices N` sets XLA_FLAGS before JAX is imported (library code never does).
"""
from __future__ import annotations

import argparse
import ast
import os
import time


def measure(num_devices: int, *, env: str = "gymnax:CartPole-v1", num_envs: int = 64,
            unroll_length: int = 32, seconds: float = 10.0, updates_per_call: int = 1,
            overrides: dict | None = None, seed: int = 0, act_only: bool = False
            ) -> dict[str, float]:
    """Steps/s of Anakin PPO on `num_devices` local devices with `num_envs` envs in all.
    `act_only`: the rollouts alone (policy + env steps, fixed parameters, no learning), the
    counterpart of scripts/benchmark.py's env_infer."""
    import jax

    from anakin import runtime
    from experiments import wiring
    from experiments.configs import ppo_gymnax
    from experiments.wiring import anakin as anakin_wiring

    config = ppo_gymnax.get_config()
    config.env.name, config.num_envs, config.unroll_length = env, num_envs, unroll_length
    config.learner_device_ids = tuple(range(num_devices))
    config.seed = seed
    for key, value in (overrides or {}).items():
        target = config
        *path, leaf = key.split(".")
        for p in path:
            target = target[p]
        target[leaf] = value
    # Read, checked and built as an Anakin run is (experiments/wiring/anakin.py).
    sections, ac = anakin_wiring.read_anakin(anakin_wiring.for_anakin(config), env=False)
    e = anakin_wiring.make_env(sections)
    _, _, agent = wiring.build_from_config(sections, e.action_space, num_updates=10**6)
    mesh = runtime.make_mesh(ac.device_ids)
    example = jax.tree.map(lambda x: x[None], e.reset(jax.random.key(0)).obs)
    state = runtime.place_replicated(agent.init(jax.random.key(seed), example), mesh)
    runner = runtime.place_runner(
        runtime.init_runner(agent, e, runtime.runner_key(seed), ac.num_envs), mesh)
    update = runtime.make_update_fn(agent, e, mesh, ac.unroll_length, updates_per_call)
    if act_only:
        update = _act_only_fn(agent, e, mesh, ac.unroll_length, updates_per_call)
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
    steps = calls * updates_per_call * ac.unroll_length * ac.num_envs
    return {"runtime": "anakin", "measure": "act_only" if act_only else "end_to_end",
            "env": env, "devices": num_devices, "num_envs": num_envs,
            "unroll_length": unroll_length, "updates_per_call": updates_per_call,
            "sps": steps / elapsed, "update_s": elapsed / (calls * updates_per_call),
            "compile_s": compile_s, "load1": os.getloadavg()[0]}


def _act_only_fn(agent, env, mesh, T: int, k: int):
    """update(state, runner) with the same signature, running k rollouts and no learning."""
    import jax
    from jax.sharding import PartitionSpec as P

    from anakin import runtime

    def per_device(state, runner):
        def body(r, _):
            r, ro, eps = runtime.rollout(agent, env, agent.actor_params(state), r, T)
            return r, (ro.reward.sum(), eps)
        runner, (total, eps) = jax.lax.scan(body, runner, None, length=k)
        eps = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), eps)
        return state, runner, {"reward": jax.lax.psum(total.sum(), runtime.AXIS)}, eps
    return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P(runtime.AXIS)),
                                 out_specs=(P(), P(runtime.AXIS), P(), P(None, runtime.AXIS)),
                                 check_vma=False), donate_argnums=1)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="gymnax:CartPole-v1")
    p.add_argument("--num_envs", type=int, default=64, help="envs in all, split over devices")
    p.add_argument("--unroll_length", type=int, default=32)
    p.add_argument("--devices", default="1,2", help="comma-separated device counts to measure")
    p.add_argument("--fake_devices", type=int, default=0,
                   help="fake N CPU devices (XLA_FLAGS, set before JAX is imported)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--updates_per_call", type=int, default=1)
    p.add_argument("--act_only", action="store_true",
                   help="rollouts only (policy + env steps, no learning)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="config override, e.g. agent.num_epochs=2 (repeatable)")
    args = p.parse_args(argv)
    counts = [int(x) for x in args.devices.split(",")]
    fake = args.fake_devices or max(counts)
    if fake > 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count={fake}").strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    overrides = {}
    for item in args.set:
        key, _, text = item.partition("=")
        try:
            overrides[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            overrides[key] = text
    print(f"anakin {'act_only' if args.act_only else 'end_to_end'} on {args.env}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'devices':>7} {'envs':>5} {'T':>4} {'K':>3} {'steps/s':>12} {'update ms':>10} "
          f"{'compile s':>9} {'load1':>6}")
    for n in counts:
        r = measure(n, env=args.env, num_envs=args.num_envs, unroll_length=args.unroll_length,
                    seconds=args.seconds, updates_per_call=args.updates_per_call,
                    overrides=overrides, act_only=args.act_only)
        print(f"{n:>7} {r['num_envs']:>5} {r['unroll_length']:>4} {r['updates_per_call']:>3} "
              f"{r['sps']:>12,.0f} {1e3 * r['update_s']:>10.2f} {r['compile_s']:>9.1f} "
              f"{r['load1']:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
