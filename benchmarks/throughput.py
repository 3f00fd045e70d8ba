"""Throughput benchmark: where the environment steps per second go in a Sebulba run.

Four measurements, all on the same total number of environments (`--num_envs`) and the same
EnvPool settings as training (`sebulba.envs.make_env` with the experiment config's `EnvConfig`),
so the rows can be compared directly (code: benchmarks/harness/measures.py; the layout's config:
benchmarks/harness/layout.py):

  env_only    Environments alone: each actor thread steps its own EnvPool batch of
              num_envs / (actor devices x actor_threads) envs with random actions, the same
              thread/pool layout as the runtime: the ceiling for the run.
  env_infer   The actor threads without training: the runtime's own sebulba.actor.ActorThread
              (overlapped half-pools per RuntimeConfig.actor_overlap, `--actor_overlap`;
              rollout assembly and shipping included) with fixed parameters, the same
              threads and pools; the rollouts are dropped. `--actor_impls before,current`
              also measures the actor without overlap (benchmarks/baselines/) in the same run.
  learner     One compiled learn step (the runtime's make_learn_fn over the learner mesh) on a
              batch of T x num_envs, after compilation: steps/s = T * num_envs / step time.
  end_to_end  The real runtime (`experiments.wiring.run`, as every experiment entry point
              runs it; config from experiments/configs/<algo>_atari.py for Atari ids,
              <algo>_classic.py otherwise, whose `agent_name` picks the agent) in
              a temporary run dir. SPS from metrics.jsonl after the first `--skip_updates`
              updates (compilation excluded): (steps_last - steps_k) / (time_last - time_k).

Anakin rows (`--measures ...,anakin_act,anakin`; docs/anakin.md): the same table
also measures the Anakin runtime (benchmarks/anakin_throughput.py's `measure`: PPO of
experiments/configs/ppo_gymnax.py on the JAX-native `--anakin_env`, MLP 64x64, with the same
`--set` overrides), once per device count in `--anakin_devices` (default 1,2), with the
Sebulba rows' batch: num_envs in all x T (the resolved `--unroll_length`):

  anakin_act  Acting alone: T policy + env steps on the devices, fixed parameters; the
              counterpart of env_infer.
  anakin      The whole compiled update (acting, env steps, PPO learn step), compile
              excluded, the update's metrics and finished games to the host after each call
              as a run does; the counterpart of end_to_end.

A device count this process does not have is measured in a fresh process with that many faked
CPU devices (XLA_FLAGS is read once per process); `--fake_devices N` measures all in this one.
The summary prints anakin[Ndev] / end_to_end and anakin_act[Ndev] / env_infer. For the same
algorithm on both runtimes use `--algo ppo_sync` (on-policy PPO) with `--env CartPole-v1`:
    python -m benchmarks.throughput --env CartPole-v1 --algo ppo_sync --actor_threads 1 \\
        --num_envs 64 --unroll_length 32 --seconds 10 \\
        --measures env_infer,end_to_end,anakin_act,anakin

Algorithms (`--algo`, `--algos`): impala; ppo (asynchronous, V-trace corrected, the config's
default); ppo_sync (on-policy: actors wait for each update). On CPU with a conv torso PPO uses
`agent.loop=unroll` (docs/ppo.md). Each measurement runs about `--seconds` after warmup.
`--rounds N` measures the whole list N times in turn (round 1's measures, then round 2's, ...)
and prints each round's ratios and the ratios of the per-measure medians: on a shared machine
the load drifts between rows, and interleaved rounds spread that drift over every measure.

Single layout (prints a table, end_to_end / env_only and / env_infer; `--csv` appends rows):
    python -m benchmarks.throughput [--env Breakout-v5] [--algo impala] [--num_envs 32]
        [--actor_threads 2] [--torso auto|nature_cnn|impala_resnet|mlp] [--seconds 20]
        [--rounds 1]
        [--unroll_length T] [--measures env_only,env_infer,learner,end_to_end]
        [--actor_device_ids 0] [--learner_device_ids 0] [--fake_devices N] [--csv PATH]
        [--anakin_env gymnax:CartPole-v1] [--anakin_devices 1,2]

Study (`--study`): loops over --study_envs x --study_threads x --study_splits x --algos, skips
measurements a layout change cannot affect (env_only ignores the algorithm and the learner
split, learner ignores actor threads), appends every row to `--csv` as it is measured and
draws `--plot` (steps/s vs num_envs, one panel per measure):
    python -m benchmarks.throughput --study --fake_devices 3 --env CartPole-v1 --seconds 4 \\
        --study_envs 16,32,64 --study_threads 1,2 --study_splits "0/0;0/1,2" \\
        --algos impala,ppo --csv docs/benchmark_study_cartpole_cpu.csv

`--study_splits` lists actor/learner device ids, e.g. "0/0;0/1,2" (the default with 3 or more
devices; "0/0;0/1" with 2). `--fake_devices N` fakes N CPU devices: the script sets
XLA_FLAGS=--xla_force_host_platform_device_count=N (and JAX_PLATFORMS=cpu unless set) before
JAX is imported; library code never does. Faked devices share the same CPU cores, so on CPU a
split measures the cost of the device-to-device copies and the collective, not a speed-up.

CSV columns (CSV_COLUMNS, benchmarks/harness/report.py): an Anakin row has algo ppo, actor_threads
0 and its devices as both actor_devices and learner_devices (each device acts and learns). Each
row records `load1`, the 1-minute load average at the end of the measurement (the benchmark's
own threads included): on a machine with C cores, load well above C means other jobs competed
and the number is not the machine's capability.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import warnings

from benchmarks.harness import layout, measures
from benchmarks.harness.report import Recorder, plot_study

MEASURES = tuple(measures.BENCHES)  # the Sebulba measures (the default)
# The Anakin runtime's rows and the Sebulba measure each one compares with.
ANAKIN_MEASURES = {"anakin_act": "env_infer", "anakin": "end_to_end"}
# EnvPool's classic-control spaces trigger a harmless float64->float32 warning from gymnasium.
warnings.filterwarnings("ignore", message=".*precision lowered by casting", category=UserWarning)


def _ids(text: str, flag: str, p: argparse.ArgumentParser) -> tuple[int, ...]:
    try:
        return tuple(int(i) for i in text.split(","))
    except ValueError:
        p.error(f"{flag}: {text!r} is not a comma-separated list of device ids")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.throughput",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Breakout-v5",
                   help="EnvPool id, gymnasium:<id>, or an env a --import module registers")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="a config override applied last, e.g. network.lstm_size=64 or "
                        "agent.loop=unroll; repeatable")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="a module (dotted name or .py file) that registers --env; repeatable")
    p.add_argument("--algo", default="impala", choices=layout.ALGOS)
    p.add_argument("--num_envs", type=int, default=32,
                   help="total envs, split evenly over actor devices x actor threads (0: the "
                        "config's envs per thread)")
    p.add_argument("--actor_threads", type=int, default=2,
                   help="actor threads per actor device (0: auto from the cores, as a run)")
    p.add_argument("--torso", default="auto",
                   help="nature_cnn | impala_resnet | mlp; auto = nature_cnn on Atari, else mlp")
    p.add_argument("--unroll_length", type=int, default=0,
                   help="T; 0 = the experiment config's value")
    p.add_argument("--seconds", type=float, default=20.0, help="timed seconds per measurement")
    p.add_argument("--rounds", type=int, default=1,
                   help="single layout: measure the list this many times in turn; ratios per "
                        "round and of the medians")
    p.add_argument("--warmup_steps", type=int, default=20,
                   help="env steps per thread before timing")
    p.add_argument("--skip_updates", type=int, default=3,
                   help="end_to_end: updates left out of the SPS (compilation, queue fill)")
    p.add_argument("--measures", default=",".join(MEASURES),
                   help=f"comma-separated, of {', '.join(MEASURES + tuple(ANAKIN_MEASURES))}")
    p.add_argument("--anakin_env", default="gymnax:CartPole-v1",
                   help="anakin measures: the JAX-native env (gymnax:<id> or registered)")
    p.add_argument("--anakin_devices", default="1,2",
                   help="anakin measures: comma-separated device counts, one row each")
    p.add_argument("--actor_device_ids", default="0", help="comma-separated local device ids")
    p.add_argument("--learner_device_ids", default="0", help="comma-separated local device ids")
    p.add_argument("--fake_devices", type=int, default=0,
                   help="fake N CPU devices (sets XLA_FLAGS before importing jax)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--actor_overlap", default="auto", choices=("auto", "on", "off"),
                   help="RuntimeConfig.actor_overlap: half-pools stepped in turn (on), one "
                        "pool (off), auto = on for EnvPool ids")
    p.add_argument("--actor_impls", default="current",
                   help="comma-separated: current (sebulba/actor.py) and/or before (the "
                        "actor without overlap, benchmarks/baselines/); env_infer and "
                        "end_to_end are measured once per actor, in this run")
    p.add_argument("--csv", default="", help="append result rows to this CSV file")
    p.add_argument("--study", action="store_true", help="loop over the --study_* grid")
    p.add_argument("--algos", default="impala,ppo", help="study: algorithms")
    p.add_argument("--study_envs", default="16,32,64", help="study: total num_envs values")
    p.add_argument("--study_threads", default="1,2", help="study: actor threads values")
    p.add_argument("--study_splits", default="auto",
                   help='study: "actor/learner;..." device ids, e.g. "0/0;0/1,2"')
    p.add_argument("--plot", default="", help="study: PNG path (default: the CSV's, .png)")
    args = p.parse_args(argv)
    args.measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    if args.rounds < 1:
        p.error(f"--rounds={args.rounds} must be >= 1")
    if args.rounds > 1 and args.study:
        p.error("--rounds is for a single layout; a --study measures each layout once")
    args.actor_impls = [a.strip() for a in args.actor_impls.split(",") if a.strip()]
    for a in args.actor_impls:
        if a not in ("current", "before"):
            p.error(f"--actor_impls: unknown actor {a!r}; allowed: current, before")
    args.actor_impl = args.actor_impls[0]
    for m in args.measures:
        if m not in MEASURES and m not in ANAKIN_MEASURES:
            p.error(f"unknown measure {m!r}; allowed: "
                    f"{', '.join(MEASURES + tuple(ANAKIN_MEASURES))}")
    args.anakin_devices = _ids(args.anakin_devices, "--anakin_devices", p)
    if any(n < 1 for n in args.anakin_devices):
        p.error(f"--anakin_devices: {args.anakin_devices} must be device counts >= 1")
    anakin = [m for m in args.measures if m in ANAKIN_MEASURES]
    if anakin and args.study:
        p.error(f"--study measures the Sebulba layouts only; drop {', '.join(anakin)}")
    for n in args.anakin_devices if anakin and args.num_envs > 0 else ():
        if args.num_envs % n:
            p.error(f"--num_envs={args.num_envs} must be divisible by every --anakin_devices "
                    f"count ({n}): Anakin splits the envs evenly over its devices.")
    args.algos = [a.strip() for a in args.algos.split(",")]
    for a in args.algos:
        if a not in layout.ALGOS:
            p.error(f"--algos: unknown algorithm {a!r}; allowed: "
                    f"{', '.join(layout.ALGOS)}")
    args.study_envs = _ids(args.study_envs, "--study_envs", p)
    args.study_threads = _ids(args.study_threads, "--study_threads", p)
    if args.study_splits != "auto":
        splits = []
        for tok in args.study_splits.split(";"):
            actor, slash, learner = tok.partition("/")
            if not slash:
                p.error(f"--study_splits token {tok!r}: expected actor_ids/learner_ids, "
                        f"e.g. 0/1,2")
            splits.append((_ids(actor, "--study_splits", p), _ids(learner, "--study_splits", p)))
        args.study_splits = splits
    args.actor_device_ids = _ids(args.actor_device_ids, "--actor_device_ids", p)
    args.learner_device_ids = _ids(args.learner_device_ids, "--learner_device_ids", p)
    threads = len(args.actor_device_ids) * args.actor_threads
    if not args.study and threads > 0 and args.num_envs % threads:
        p.error(f"--num_envs={args.num_envs} must be divisible by actor devices x actor threads "
                f"({threads}), so every thread gets the same pool size.")
    if args.study and not args.csv:
        args.csv = os.path.join("runs", f"benchmark_study_{args.env}.csv")
    return args


def single(args, rec: Recorder) -> dict[str, float]:
    """Measures one layout `args.rounds` times; returns each measure's steps/s (with several
    rounds, the median over them)."""
    config = layout.make_config(args.env, args.algo, args.torso, args.num_envs,
                                args.actor_threads, args.actor_device_ids,
                                args.learner_device_ids, args.unroll_length, args.seed,
                                args.set)
    layout.set_actor_overlap(config, args.actor_overlap)
    rounds = []
    for r in range(args.rounds):
        if args.rounds > 1:
            print(f"round {r + 1}/{args.rounds}", flush=True)
        rounds.append(_one_round(args, rec, config))
    width = max([11] + [len(row["label"]) for row in rec.rows])
    print(f"\n{'measure':<{width}s} {'steps/s':>12s}  detail")
    for row in rec.rows:
        print(f"{row['label']:<{width}s} {row['steps_per_s']:>12,.0f}  {row['detail']}")
    if args.rounds == 1:
        _print_ratios(args, rounds[0], "")
        return rounds[0]
    for r, results in enumerate(rounds):
        _print_ratios(args, results, f"round {r + 1}: ")
    medians = {k: statistics.median(res[k] for res in rounds) for k in rounds[0]}
    print(f"medians of {args.rounds} rounds: "
          + ", ".join(f"{k} {v:,.0f}" for k, v in medians.items()))
    _print_ratios(args, medians, "median: ")
    return medians


def _one_round(args, rec: Recorder, config) -> dict[str, float]:
    """Every measure of `args.measures` once: {row label: steps/s}."""
    results: dict[str, float] = {}
    for m in args.measures:
        if m in ANAKIN_MEASURES:  # the same batch as the Sebulba rows: envs in all x T
            total = config.num_envs  # per process, over every actor thread
            for n in args.anakin_devices:
                row = rec.measure_anakin(m, n, total, config.unroll_length)
                results[row["label"]] = row["steps_per_s"]
            continue
        # The actor only changes env_infer and end_to_end: those run once per --actor_impls.
        impls = args.actor_impls if m in ("env_infer", "end_to_end") else args.actor_impls[:1]
        for impl in impls:
            args.actor_impl = impl
            key = m if len(impls) == 1 else f"{m}[{impl}]"
            results[key] = rec.measure(m, args.algo, config)["steps_per_s"]
    args.actor_impl = args.actor_impls[0]
    return results


def _print_ratios(args, results: dict[str, float], prefix: str) -> None:
    """end_to_end against env_only, env_infer and the shared-core bound; Anakin rows against
    the Sebulba measure of the same work."""
    for impl in args.actor_impls:
        tag = "" if len(args.actor_impls) == 1 else f"[{impl}]"
        e2e, infer = results.get(f"end_to_end{tag}"), results.get(f"env_infer{tag}")
        if e2e is None:
            continue
        for base in ("env_only", f"env_infer{tag}"):
            if base in results:
                print(f"{prefix}end_to_end{tag} / {base:<9s} = {e2e / results[base]:.3f}")
        if infer and "learner" in results:
            # Actors and learner sharing the same cores can at best add their times up.
            bound = 1.0 / (1.0 / infer + 1.0 / results["learner"])
            print(f"{prefix}end_to_end{tag} / shared-core bound 1/(1/env_infer+1/learner) "
                  f"({bound:,.0f}) = {e2e / bound:.3f}")
    for label, sps in results.items():  # labels "anakin[Ndev]", "anakin_act[Ndev]"
        base = ANAKIN_MEASURES.get(label.split("[")[0])
        for key in [k for k in results if base and k.split("[")[0] == base and results[k]]:
            print(f"{prefix}{label} / {key} = {sps / results[key]:.2f}")


def study(args, rec: Recorder, n_devices: int) -> list[dict]:
    splits = args.study_splits
    if splits == "auto":
        splits = [((0,), (0,))] + ([((0,), (1, 2))] if n_devices >= 3 else
                                   [((0,), (1,))] if n_devices == 2 else [])
    done: set = set()
    for algo in args.algos:
        for actor_ids, learner_ids in splits:
            for num_envs in args.study_envs:
                for threads in args.study_threads:
                    for m in args.measures:
                        # What each measurement depends on; a repeat would only re-measure.
                        key = {"env_only": (num_envs, threads, actor_ids),
                               "env_infer": (algo.removesuffix("_sync"), num_envs, threads,
                                             actor_ids),
                               "learner": (algo, num_envs, learner_ids)}.get(
                            m, (algo, num_envs, threads, actor_ids, learner_ids))
                        if (m, key) in done:
                            continue
                        done.add((m, key))
                        try:
                            config = layout.make_config(
                                args.env, algo, args.torso, num_envs, threads, actor_ids,
                                learner_ids, args.unroll_length, args.seed, args.set)
                            rec.measure(m, algo, config)
                        except ValueError as e:  # a layout this config cannot take
                            print(f"  {m:<11s} {algo:<8s} envs {num_envs} threads {threads} "
                                  f"split {actor_ids}/{learner_ids}: skipped: {e}", flush=True)
    plot_path = args.plot or os.path.splitext(args.csv)[0] + ".png"
    plot_study(rec.rows, plot_path, f"{args.env}: steps/s ({rec.backend}, {os.cpu_count()} "
               f"CPUs, load {min(r['load1'] for r in rec.rows):.1f}-"
               f"{max(r['load1'] for r in rec.rows):.1f})")
    print(f"study: {len(rec.rows)} rows -> {args.csv}, plot -> {plot_path}")
    return rec.rows


def main(argv=None):
    args = parse_args(argv)
    if args.fake_devices > 0:  # must happen before jax is imported anywhere
        if "jax" in sys.modules:
            raise RuntimeError("--fake_devices: jax was imported before the flag was applied.")
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count="
                                   f"{args.fake_devices}").strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    from experiments.wiring.user_modules import import_modules
    import_modules(args.imports)  # user modules that register envs/torsos (--import)
    backend = jax.default_backend()
    print(f"benchmark: {args.env}, backend {backend} ({jax.local_device_count()} devices), "
          f"{os.cpu_count()} CPUs, host {socket.gethostname()}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} before starting", flush=True)
    rec = Recorder(args, backend)
    if args.study:
        return study(args, rec, jax.local_device_count())
    return single(args, rec)


if __name__ == "__main__":
    main()
