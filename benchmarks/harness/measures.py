"""The four throughput measurements of benchmarks/throughput.py, for IMPALA and PPO.

Each `bench_<measure>(opts, config)` returns (steps per second, detail text). `config` is the
experiment ConfigDict of one algorithm and layout (benchmarks.harness.layout.make_config; its
`agent_name` names the agent); `opts` carries seconds, warmup_steps, skip_updates and seed.
Measurement definitions are in benchmarks/throughput.py's docstring.

Nothing here re-implements the runtime: the config is read and the network and agent built by
experiments.wiring (as every run is), pools and actor threads get the runtime's own seeds
(`sebulba.runner.actor_seed`), env_infer runs `sebulba.actor.ActorThread`, the learner batch
has the shapes of the runtime's policy step (`sebulba.actor_policy.policy_fn`), and end_to_end is
`experiments.wiring.run`.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import threading
import time

import numpy as np


def read(config):
    """The config's checked sections (experiments/wiring), as a run reads them; a ConfigError
    (a ValueError) names a field this layout cannot take."""
    from experiments import wiring
    return wiring.read(config, devices=False, env_id=False)


def make_agent(sections, action_space, num_updates: int = 1):
    """The agent a run of this config trains (the config's agent_name), built by the wiring."""
    from experiments import wiring
    return wiring.build_from_config(sections, action_space, num_updates=num_updates)[2]


def run_threads(n: int, body, seconds: float) -> float:
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


def run_on_pools(pools: list, body, seconds: float) -> float:
    """run_threads with one thread per env pool; closes the pools however it ends."""
    try:
        return run_threads(len(pools), body, seconds)
    finally:
        for env in pools:
            env.close()


def _pools(opts, sections):
    """One env pool per actor thread, seeded as the runtime seeds that thread's pool."""
    from sebulba import envs
    from sebulba.runner import actor_seed
    rc = sections.runtime
    n = len(rc.actor_device_ids) * rc.num_actor_threads
    return [envs.make_env(sections.env, rc.envs_per_thread, actor_seed(opts.seed, i))
            for i in range(n)]


def timed_steps(step, warmup: int, barrier, box) -> int:
    """Calls `step` `warmup` times, waits for the other threads, then counts the calls made
    until the deadline box[0] (set by run_threads once every thread is at the barrier)."""
    for _ in range(warmup):
        step()
    barrier.wait()
    steps = 0
    while time.perf_counter() < box[0]:
        step()
        steps += 1
    return steps


def random_actions(space, num_envs: int, n: int, seed: int) -> list:
    """`n` random batched actions of any gymnasium action space (Discrete, Box, Dict, ...)."""
    from gymnasium.vector.utils import batch_space
    batched = batch_space(space, num_envs)
    batched.seed(seed)
    return [batched.sample() for _ in range(n)]


def bench_env_only(opts, config) -> tuple[float, str]:
    """Random actions: no agent."""
    pools = _pools(opts, read(config))

    def body(i, barrier, box):
        env = pools[i]
        bank = random_actions(env.action_space, env.num_envs, 64, seed=i)
        env.reset()
        t = itertools.count()
        return env.num_envs * timed_steps(lambda: env.step(bank[next(t) % 64]),
                                          opts.warmup_steps, barrier, box)

    sps = run_on_pools(pools, body, opts.seconds)
    return sps, f"{len(pools)} pools x {pools[0].num_envs} envs, random actions"


def actor_class(opts):
    """The ActorThread to measure: the runtime's (`--actor_impl current`) or the frozen actor
    without overlap (`before`, benchmarks/baselines/actor_without_overlap.py), which takes none
    of the keyword arguments the overlap added."""
    if getattr(opts, "actor_impl", "current") == "current":
        from sebulba.actor import ActorThread
        return ActorThread
    from benchmarks.baselines.actor_without_overlap import ActorThread as Before

    def make(*, make_env_sized=None, overlap=None, num_envs=None, policy=None, **kw):
        del make_env_sized, overlap, num_envs, policy  # the old actor has one pool, no overlap
        return Before(**kw)
    return make


def bench_env_infer(opts, config) -> tuple[float, str]:
    """The runtime's own actor threads (sebulba.actor.ActorThread: overlap, rollout assembly,
    shipping) with fixed parameters; a drain thread per actor drops the rollouts."""
    import queue
    import jax
    from jax.sharding import SingleDeviceSharding
    from sebulba import envs
    from sebulba.pipeline import Lifetime, ParamsSource
    from sebulba.runner import actor_seed
    sections = read(config)
    ec, rc = sections.env, sections.runtime
    devices = [jax.local_devices()[i] for i in rc.actor_device_ids]
    layout = [d for d in devices for _ in range(rc.num_actor_threads)]
    probe = envs.make_env(ec, 1, opts.seed)
    obs0, space = probe.reset(), probe.action_space
    probe.close()
    agent = make_agent(sections, space)
    state = agent.init(jax.random.key(opts.seed), obs0)
    lifetime = Lifetime()
    params = ParamsSource(devices, lifetime)
    params.publish(agent.actor_params(state), 0)
    make_actor = actor_class(opts)
    sized = lambda n, seed: envs.make_env(ec, n, seed)  # noqa: E731
    counts = [0] * len(layout)
    box: list[float] = []
    actors, drains = [], []

    def drain(i, q):  # counts the steps of rollouts that arrive inside the timed window
        while not lifetime.stopping:
            try:
                msg = q.get(timeout=0.1)
            except queue.Empty:
                continue
            if box and box[0] <= time.perf_counter() <= box[1]:
                counts[i] += msg.env_steps
            elif not box:
                counts[i] = -1  # warmed up: this thread has delivered a rollout
    for i, device in enumerate(layout):
        q: queue.Queue = queue.Queue(maxsize=rc.queue_size)
        actors.append(make_actor(
            actor_id=i, device=device, agent=agent,
            make_env=lambda s: sized(rc.envs_per_thread, s), seed=actor_seed(opts.seed, i),
            unroll_length=rc.unroll_length, params=params, out_queue=q,
            learner_sharding=SingleDeviceSharding(device), lifetime=lifetime,
            make_env_sized=sized, overlap=rc.actor_overlap, num_envs=rc.envs_per_thread))
        drains.append(threading.Thread(target=drain, args=(i, q), daemon=True))
    for t in actors + drains:
        t.start()
    try:
        while any(c == 0 for c in counts):  # compile and fill: every actor shipped once
            time.sleep(0.05)
            lifetime.raise_if_failed()
        for _ in range(2):  # let the next rollouts start cleanly before the clock
            time.sleep(0.2)
        counts[:] = [0] * len(layout)
        start = time.perf_counter()
        box[:] = [start, start + opts.seconds]
        time.sleep(opts.seconds)
        elapsed = time.perf_counter() - start
    finally:
        lifetime.stop()
        for t in actors + drains:
            t.join(timeout=30)
    lifetime.raise_if_failed()
    overlap = [getattr(a, "overlapping", False) for a in actors]
    mode = "overlapped half-pools" if all(overlap) else "one pool"
    return sum(counts) / elapsed, (f"{len(layout)} threads x {rc.envs_per_thread} envs, "
                                   f"{getattr(opts, 'actor_impl', 'current')} actor, {mode}, "
                                   f"on {devices[0]}")


def _random_rollout(agent, params, obs0, T: int, b: int, action_space, rng):
    """One actor thread's rollout: real observations, random actions/rewards, and extras of
    the shapes the runtime's policy step returns (IMPALA: logits; PPO: logits and value)."""
    import jax
    from sebulba.actor_policy import policy_fn
    from podracer.agent import Rollout
    obs_b = jax.tree.map(lambda x: np.broadcast_to(x[:1], (b,) + x.shape[1:]), obs0)
    actions = random_actions(action_space, b, T, seed=int(rng.integers(2**31)))
    core = agent.initial_core_state(b) if agent.recurrent else None
    reset = None if core is None else np.ones(b, bool)  # every env starts an episode
    _, extras, *_ = jax.eval_shape(policy_fn(agent), params, obs_b, jax.random.key(0), core,
                                   reset)
    extras = jax.tree.map(lambda s: (rng.standard_normal((T,) + s.shape).astype(s.dtype)
                                     if np.issubdtype(s.dtype, np.floating)
                                     else np.zeros((T,) + s.shape, s.dtype)), extras)
    return Rollout(
        obs=jax.tree.map(lambda x: np.broadcast_to(x, (T + 1,) + x.shape).copy(), obs_b),
        action=jax.tree.map(lambda *a: np.stack(a), *actions),
        reward=rng.standard_normal((T, b)).astype(np.float32),
        terminated=rng.random((T, b)) < 0.01, truncated=np.zeros((T, b), bool),
        valid=np.ones((T, b), bool), extras=extras,
        core_state=None if core is None else jax.tree.map(lambda x: np.asarray(x)[None], core))


def bench_learner(opts, config) -> tuple[float, str]:
    import jax
    from sebulba import envs
    from sebulba.learner import make_learn_fn, place_learner_state
    from sebulba.topology import make_topology
    sections = read(config)
    rc = sections.runtime
    probe = envs.make_env(sections.env, rc.envs_per_thread, opts.seed)
    obs0, action_space = probe.reset(), probe.action_space
    probe.close()
    agent = make_agent(sections, action_space, num_updates=1000)
    topo = make_topology(rc.actor_device_ids, rc.learner_device_ids, rc.envs_per_thread)
    init = agent.init(jax.random.key(opts.seed), jax.tree.map(lambda x: x[:1], obs0))
    batch_envs = sections.shape.batch_envs
    T, b, n_threads = rc.unroll_length, rc.envs_per_thread, batch_envs // rc.envs_per_thread
    rng = np.random.default_rng(opts.seed)
    batch = tuple(jax.device_put(_random_rollout(agent, agent.actor_params(init), obs0, T, b,
                                                 action_space, rng),
                                 topo.batch_sharded()) for _ in range(n_threads))
    state = place_learner_state(init, topo)
    learn = make_learn_fn(agent, topo)
    t0 = time.perf_counter()
    state, metrics = learn(state, batch)
    jax.device_get(metrics)
    compile_s = time.perf_counter() - t0
    state, metrics = learn(state, batch)  # one more untimed step (allocations settle)
    jax.device_get(metrics)
    steps, start = 0, time.perf_counter()
    while steps < 3 or time.perf_counter() - start < opts.seconds:
        state, metrics = learn(state, batch)
        jax.device_get(metrics)  # the runtime waits for each update the same way
        steps += 1
    step_s = (time.perf_counter() - start) / steps
    devs = ",".join(str(d) for d in topo.learner_devices)
    return (T * batch_envs / step_s,
            f"{step_s * 1e3:.1f} ms/step on {T}x{batch_envs} ({steps} steps, "
            f"compile {compile_s:.0f}s) on {devs}")


def bench_end_to_end(opts, config) -> tuple[float, str]:
    """The real runtime (experiments.wiring.run, as every experiment entry point runs it),
    stopped after a while."""
    from experiments import wiring
    from sebulba.pipeline import Stopped
    sections = read(config)
    steps_per_update = sections.shape.samples
    k = max(1, opts.skip_updates)
    run_dir = tempfile.mkdtemp(prefix="sebulba-bench-")
    config.run_dir = run_dir
    config.console_every_s = 1e9  # quiet: the table is the output
    config.checkpoint_keep = 0    # no checkpoint writes inside the timed window
    # A cap never reached (the time bound stops the run); it also sets the LR decay horizon.
    config.total_env_steps = steps_per_update * 1_000_000
    mark: list[float] = []

    def on_update(update, env_steps, state):
        if update == k:
            mark.append(time.perf_counter())
        # At least 3 timed updates, so a slow (CPU) learner still gives a usable rate.
        if mark and update >= k + 3 and time.perf_counter() - mark[0] >= opts.seconds:
            raise Stopped()  # runner.train treats this as a clean stop

    from sebulba import runner
    real_actor = runner.ActorThread
    runner.ActorThread = actor_class(opts)  # --actor_impl before: the actor without overlap
    try:
        result = wiring.run(config, on_update=on_update)
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    finally:
        runner.ActorThread = real_actor
        shutil.rmtree(run_dir, ignore_errors=True)
    if len(lines) <= k:
        raise RuntimeError(f"end_to_end: only {len(lines)} updates logged; need more than "
                           f"--skip_updates={k}. Raise --seconds.")
    a, z = lines[k - 1], lines[-1]
    sps = (z["step"] - a["step"]) / (z["time"] - a["time"])
    return sps, (f"updates {k + 1}..{len(lines)} of {steps_per_update} steps "
                 f"(sps incl. compile: {result.last_metrics.get('sps', 0):.0f}, "
                 f"lag {result.last_metrics.get('policy_lag/mean', 0):.1f})")


BENCHES = {"env_only": bench_env_only, "env_infer": bench_env_infer,
           "learner": bench_learner, "end_to_end": bench_end_to_end}
