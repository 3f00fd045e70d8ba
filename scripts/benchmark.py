"""Throughput benchmark: where the environment steps per second go in a Sebulba run.

Four measurements, all on the same total number of environments (`--num_envs`, default 32) and
the same EnvPool settings as training (`sebulba.envs.make_env` with the experiment config's
`EnvConfig`), so the rows can be compared directly:

  env_only    Environments alone: each of the actor threads steps its own EnvPool batch of
              num_envs / (actor devices x actor_threads) envs with random actions. This is the
              same thread/pool layout the runtime uses, i.e. the ceiling for the run.
  env_infer   The actor's hot loop without training: the same threads and pools, each step does
              device_put(obs) -> one jitted policy call (network forward + sampling, the IMPALA
              agent's actor_step) -> np.asarray(action) -> env.step.
  learner     One compiled IMPALA learn step (the runtime's make_learn_fn over the learner mesh)
              on a batch of T x num_envs, after compilation: steps/s = T * num_envs / step time.
  end_to_end  The real runtime (`sebulba.experiment.run` with `experiments.impala_atari`'s agent
              builder, i.e. what `experiments.impala_atari.run` does; config from
              experiments/configs/impala_atari.py for Atari ids, impala_classic.py otherwise),
              in a temporary run dir. To exclude compile time, SPS is computed from the
              metrics.jsonl lines *after* the first `--skip_updates` updates:
              (steps_last - steps_k) / (time_last - time_k). The run is stopped `--seconds`
              after update k (via the on_update hook). TrainResult.last_metrics["sps"], which
              includes compilation, is printed for reference only.

Each measurement runs for about `--seconds` (default 20) after its warmup, so the whole script
takes about 2 minutes on 2 CPU cores (plus compile time). It prints a table and the ratios
end_to_end / env_only and end_to_end / env_infer; `--csv PATH` appends one row per measurement
(columns: env, num_envs, actor_threads, torso, measure, steps_per_s, host).

Usage:
    python scripts/benchmark.py [--env Breakout-v5] [--num_envs 32] [--actor_threads 2]
        [--torso auto|nature_cnn|impala_resnet|mlp] [--seconds 20] [--unroll_length T]
        [--measures env_only,env_infer,learner,end_to_end] [--csv PATH]
        [--actor_device_ids 0] [--learner_device_ids 0] [--fake_devices N]

    python scripts/benchmark.py --env CartPole-v1 --torso mlp --seconds 5

Defaults: Breakout-v5, 32 envs in 2 actor threads on device 0, learner on device 0,
torso auto (nature_cnn for Atari ids, mlp otherwise), 20 s per measurement.

`--fake_devices N` fakes N CPU devices for trying multi-device layouts on one machine (e.g.
`--fake_devices 3 --actor_device_ids 0 --learner_device_ids 1,2`): the script sets
XLA_FLAGS=--xla_force_host_platform_device_count=N (and JAX_PLATFORMS=cpu unless set) itself,
before JAX is imported. Library code never does this.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

MEASURES = ("env_only", "env_infer", "learner", "end_to_end")
# EnvPool's classic-control spaces trigger a harmless float64->float32 warning from gymnasium.
warnings.filterwarnings("ignore", message=".*precision lowered by casting", category=UserWarning)
CSV_COLUMNS = ("env", "num_envs", "actor_threads", "torso", "measure", "steps_per_s", "host")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Breakout-v5", help="EnvPool id")
    p.add_argument("--num_envs", type=int, default=32,
                   help="total envs, split evenly over actor devices x actor threads")
    p.add_argument("--actor_threads", type=int, default=2, help="actor threads per actor device")
    p.add_argument("--torso", default="auto",
                   help="nature_cnn | impala_resnet | mlp; auto = nature_cnn on Atari, else mlp")
    p.add_argument("--unroll_length", type=int, default=0,
                   help="T; 0 = the experiment config's value (Atari 20, classic 16)")
    p.add_argument("--seconds", type=float, default=20.0, help="timed seconds per measurement")
    p.add_argument("--warmup_steps", type=int, default=20, help="env steps per thread before timing")
    p.add_argument("--skip_updates", type=int, default=3,
                   help="end_to_end: updates left out of the SPS (compilation, queue fill)")
    p.add_argument("--measures", default=",".join(MEASURES), help="comma-separated subset")
    p.add_argument("--actor_device_ids", default="0", help="comma-separated local device ids")
    p.add_argument("--learner_device_ids", default="0", help="comma-separated local device ids")
    p.add_argument("--fake_devices", type=int, default=0,
                   help="fake N CPU devices (sets XLA_FLAGS before importing jax)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", default="", help="append result rows to this CSV file")
    args = p.parse_args(argv)
    args.measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    for m in args.measures:
        if m not in MEASURES:
            p.error(f"unknown measure {m!r}; allowed: {', '.join(MEASURES)}")
    args.actor_device_ids = tuple(int(i) for i in args.actor_device_ids.split(","))
    args.learner_device_ids = tuple(int(i) for i in args.learner_device_ids.split(","))
    threads = len(args.actor_device_ids) * args.actor_threads
    if args.num_envs % threads:
        p.error(f"--num_envs={args.num_envs} must be divisible by actor devices x actor threads "
                f"({threads}), so every thread gets the same pool size.")
    return args


def make_config(args):
    """The experiment ConfigDict (Atari or classic) with the benchmark's overrides."""
    from experiments.configs import impala_atari, impala_classic
    from sebulba import envs
    envs.check_env_id(args.env)
    atari = envs.is_atari(args.env)
    config = (impala_atari if atari else impala_classic).get_config()
    if args.torso == "auto":
        args.torso = "nature_cnn" if atari else "mlp"
    config.env.name = args.env
    config.network.torso = args.torso
    config.seed = args.seed
    config.actor_device_ids = args.actor_device_ids
    config.learner_device_ids = args.learner_device_ids
    config.num_actor_threads = args.actor_threads
    config.num_envs = args.num_envs // (len(args.actor_device_ids) * args.actor_threads)
    if args.unroll_length > 0:
        config.unroll_length = args.unroll_length
    return config


def _run_threads(n: int, body, seconds: float) -> float:
    """Runs body(i, barrier, box) in n threads; returns total env steps / timed seconds.

    Each body warms up, waits on the barrier, then steps until `box[0]` (the deadline, set when
    the barrier releases) and returns the env steps it took after the barrier.
    """
    counts = [0] * n
    errors: list[BaseException] = []
    box = [0.0]
    # The barrier's action runs once, when every thread has warmed up: the clock starts there.
    barrier = threading.Barrier(
        n + 1, action=lambda: box.__setitem__(0, time.perf_counter() + seconds))

    def target(i):
        try:
            counts[i] = body(i, barrier, box)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(counts) / (time.perf_counter() - (box[0] - seconds))


def bench_env_only(args, config) -> tuple[float, str]:
    from sebulba import envs, experiment
    ec, rc = experiment.env_config(config), experiment.runtime_config(config)
    n_threads = len(rc.actor_device_ids) * rc.num_actor_threads
    pools = [envs.make_env(ec, rc.num_envs, args.seed + 100_003 * (i + 1))
             for i in range(n_threads)]
    n_actions = int(pools[0].action_space.n)

    def body(i, barrier, box):
        env, rng = pools[i], np.random.default_rng(i)
        bank = rng.integers(0, n_actions, size=(64, env.num_envs), dtype=np.int32)
        env.reset()
        for t in range(args.warmup_steps):
            env.step(bank[t % 64])
        barrier.wait()
        steps = 0
        while time.perf_counter() < box[0]:
            env.step(bank[steps % 64])
            steps += 1
        return steps * env.num_envs

    try:
        sps = _run_threads(n_threads, body, args.seconds)
    finally:
        for env in pools:
            env.close()
    return sps, f"{n_threads} pools x {rc.num_envs} envs, random actions"


def _agent(config, action_space, num_updates: int = 1):
    from experiments import impala_atari
    from sebulba import experiment
    network = experiment.make_network(config, action_space)
    return impala_atari.make_agent(network, config.agent, num_updates)


def bench_env_infer(args, config) -> tuple[float, str]:
    import jax
    from sebulba import envs, experiment
    ec, rc = experiment.env_config(config), experiment.runtime_config(config)
    devices = [jax.local_devices()[i] for i in rc.actor_device_ids]
    layout = [(d, t) for d in devices for t in range(rc.num_actor_threads)]
    pools = [envs.make_env(ec, rc.num_envs, args.seed + 100_003 * (i + 1))
             for i in range(len(layout))]
    agent = _agent(config, pools[0].action_space)
    first_obs = [env.reset() for env in pools]
    state = agent.init(jax.random.key(args.seed), first_obs[0][:1])
    params = {d: jax.device_put(agent.actor_params(state), d) for d in devices}

    @jax.jit
    def policy(params, obs, key):  # as sebulba.actor.ActorThread._policy_step
        key, sub = jax.random.split(key)
        action, extras = agent.actor_step(params, obs, sub)
        return action, extras, key

    for d in devices:  # compile before timing (one executable per device)
        jax.block_until_ready(policy(params[d], jax.device_put(first_obs[0], d),
                                     jax.device_put(jax.random.key(0), d)))

    def body(i, barrier, box):
        env, device = pools[i], layout[i][0]
        p = params[device]
        key = jax.device_put(jax.random.key(args.seed + i), device)
        obs = first_obs[i]
        for _ in range(args.warmup_steps):
            action, _, key = policy(p, jax.device_put(obs, device), key)
            obs = env.step(np.asarray(action)).obs
        barrier.wait()
        steps = 0
        while time.perf_counter() < box[0]:  # the actor's hot loop, nothing else
            obs_dev = jax.device_put(obs, device)
            action, _, key = policy(p, obs_dev, key)
            obs = env.step(np.asarray(action)).obs
            steps += 1
        return steps * env.num_envs

    try:
        sps = _run_threads(len(layout), body, args.seconds)
    finally:
        for env in pools:
            env.close()
    return sps, f"{len(layout)} threads x {rc.num_envs} envs, jitted policy on {devices[0]}"


def bench_learner(args, config) -> tuple[float, str]:
    import jax
    from sebulba import envs, experiment
    from sebulba.agent import Rollout
    from sebulba.learner import make_learn_fn, place_learner_state
    from sebulba.topology import make_topology
    ec, rc = experiment.env_config(config), experiment.runtime_config(config)
    probe = envs.make_env(ec, rc.num_envs, args.seed)
    obs0, action_space = probe.reset(), probe.action_space
    probe.close()
    agent = _agent(config, action_space, num_updates=1000)
    topo = make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.num_envs)
    state = place_learner_state(agent.init(jax.random.key(args.seed), obs0[:1]), topo)
    learn = make_learn_fn(agent, topo)
    T, b, n_threads = rc.unroll_length, rc.num_envs, rc.batch_envs // rc.num_envs
    rng = np.random.default_rng(args.seed)

    def rollout():  # one actor thread's rollout, with real observations
        return Rollout(
            obs=np.broadcast_to(obs0, (T + 1,) + obs0.shape).copy(),
            action=rng.integers(0, int(action_space.n), (T, b)).astype(np.int32),
            reward=rng.standard_normal((T, b)).astype(np.float32),
            terminated=rng.random((T, b)) < 0.01, truncated=np.zeros((T, b), bool),
            valid=np.ones((T, b), bool),
            extras={"logits": rng.standard_normal((T, b, int(action_space.n))).astype(
                np.float32)})

    batch = tuple(jax.device_put(rollout(), topo.batch_sharded()) for _ in range(n_threads))
    t0 = time.perf_counter()
    state, metrics = learn(state, batch)
    jax.device_get(metrics)
    compile_s = time.perf_counter() - t0
    state, metrics = learn(state, batch)  # one more untimed step (allocations settle)
    jax.device_get(metrics)
    steps, start = 0, time.perf_counter()
    while steps < 3 or time.perf_counter() - start < args.seconds:
        state, metrics = learn(state, batch)
        jax.device_get(metrics)  # the runtime waits for each update the same way
        steps += 1
    step_s = (time.perf_counter() - start) / steps
    devs = ",".join(str(d) for d in topo.learner_devices)
    return (T * rc.batch_envs / step_s,
            f"{step_s * 1e3:.1f} ms/step on {T}x{rc.batch_envs} ({steps} steps, "
            f"compile {compile_s:.0f}s) on {devs}")


def bench_end_to_end(args, config) -> tuple[float, str]:
    from experiments import impala_atari
    from sebulba import experiment
    from sebulba.pipeline import Stopped
    rc = experiment.runtime_config(config)
    k = max(1, args.skip_updates)
    run_dir = tempfile.mkdtemp(prefix="sebulba-bench-")
    config.run_dir = run_dir
    config.console_every_s = 1e9  # quiet: the table below is the output
    # A cap never reached (the time bound stops the run); it also sets the LR decay horizon.
    config.total_env_steps = rc.steps_per_update * 1_000_000
    mark: list[float] = []

    def on_update(update, env_steps, state):
        if update == k:
            mark.append(time.perf_counter())
        # At least 3 timed updates, so a slow (CPU) learner still gives a usable rate.
        if mark and update >= k + 3 and time.perf_counter() - mark[0] >= args.seconds:
            raise Stopped()  # runner.train treats this as a clean stop

    try:
        result = experiment.run(config, impala_atari.make_agent, name="impala",
                                on_update=on_update)
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    if len(lines) <= k:
        raise RuntimeError(f"end_to_end: only {len(lines)} updates logged; need more than "
                           f"--skip_updates={k}. Raise --seconds.")
    a, z = lines[k - 1], lines[-1]
    sps = (z["step"] - a["step"]) / (z["time"] - a["time"])
    return sps, (f"metrics.jsonl updates {k + 1}..{len(lines)} of {rc.steps_per_update} steps "
                 f"(last_metrics sps incl. compile: {result.last_metrics.get('sps', 0):.0f}, "
                 f"lag {result.last_metrics.get('policy_lag/mean', 0):.1f})")


BENCHES = {"env_only": bench_env_only, "env_infer": bench_env_infer,
           "learner": bench_learner, "end_to_end": bench_end_to_end}


def main(argv=None) -> dict[str, float]:
    args = parse_args(argv)
    if args.fake_devices > 0:  # must happen before jax is imported anywhere
        if "jax" in sys.modules:
            raise RuntimeError("--fake_devices: jax was imported before the flag was applied.")
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count="
                                   f"{args.fake_devices}").strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    config = make_config(args)
    host = socket.gethostname()
    rc_envs = config.num_envs * len(args.actor_device_ids) * args.actor_threads
    print(f"benchmark: {args.env}, {rc_envs} envs ({len(args.actor_device_ids)} actor device(s) "
          f"x {args.actor_threads} threads x {config.num_envs} envs), torso {args.torso}, "
          f"T={config.unroll_length}, backend {jax.default_backend()} "
          f"({jax.local_device_count()} devices), {os.cpu_count()} CPUs, host {host}",
          flush=True)
    results: dict[str, float] = {}
    details: dict[str, str] = {}
    for m in args.measures:
        t0 = time.perf_counter()
        results[m], details[m] = BENCHES[m](args, config.copy_and_resolve_references())
        print(f"  {m:<11s} {results[m]:>12,.0f} steps/s   ({time.perf_counter() - t0:.0f}s "
              f"wall) {details[m]}", flush=True)

    print(f"\n{'measure':<11s} {'steps/s':>12s}  detail")
    for m, v in results.items():
        print(f"{m:<11s} {v:>12,.0f}  {details[m]}")
    if "end_to_end" in results:
        for base in ("env_only", "env_infer"):
            if base in results:
                print(f"end_to_end / {base:<9s} = {results['end_to_end'] / results[base]:.3f}")
    if args.csv:
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        with open(args.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(CSV_COLUMNS)
            for m, v in results.items():
                w.writerow((args.env, rc_envs, args.actor_threads, args.torso, m, f"{v:.1f}",
                            host))
    return results


if __name__ == "__main__":
    main()
