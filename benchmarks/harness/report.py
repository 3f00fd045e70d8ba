"""How benchmarks/throughput.py reports: `Recorder` runs one measurement (a Sebulba measure of
measures.py or an Anakin row of anakin_throughput.py), prints its line and appends its CSV row at
once; `plot_study` draws a study's rows (steps/s vs num_envs, one panel per measure)."""
from __future__ import annotations

import csv
import os
import socket
import time

from benchmarks import anakin_throughput
from benchmarks.harness import measures


CSV_COLUMNS = ("env", "algo", "torso", "num_envs", "actor_threads", "actor_devices",
               "learner_devices", "unroll_length", "measure", "steps_per_s", "backend", "load1",
               "cpus", "host", "time", "detail")


class Recorder:
    """Runs one measurement, prints it, and appends its CSV row at once (a long study that
    is interrupted keeps what it measured)."""

    def __init__(self, args, backend: str) -> None:
        self.args, self.backend, self.rows = args, backend, []
        self.host = socket.gethostname()
        if args.csv:
            if os.path.exists(args.csv) and os.path.getsize(args.csv) > 0:
                with open(args.csv, newline="") as f:
                    header = next(csv.reader(f))
                if tuple(header) != CSV_COLUMNS:
                    raise SystemExit(f"benchmarks.throughput: {args.csv} has columns {header}, not "
                                     f"{list(CSV_COLUMNS)}; write to another --csv file.")
            else:
                os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
                with open(args.csv, "w", newline="") as f:
                    csv.writer(f).writerow(CSV_COLUMNS)

    def measure(self, measure: str, algo: str, config) -> dict:
        t0 = time.perf_counter()
        sps, detail = measures.BENCHES[measure](self.args, config.copy_and_resolve_references())
        load1 = os.getloadavg()[0]
        if measure == "end_to_end":
            detail = f"{self.args.actor_impl} actor, overlap {self.args.actor_overlap}; {detail}"
        row = dict(env=config.env.name, algo="-" if measure == "env_only" else algo,
                   torso=config.network.torso,
                   num_envs=config.num_envs,
                   actor_threads=config.num_actor_threads,
                   actor_devices=",".join(map(str, config.actor_device_ids)),
                   learner_devices=",".join(map(str, config.learner_device_ids)),
                   unroll_length=config.unroll_length, measure=measure,
                   steps_per_s=round(sps, 1), backend=self.backend, load1=round(load1, 2),
                   cpus=os.cpu_count(), host=self.host, time=time.strftime("%Y-%m-%d %H:%M"),
                   detail=detail, label=measure)
        return self._emit(row, f"threads {row['actor_threads']} a{row['actor_devices']}/"
                               f"l{row['learner_devices']}", t0)

    def measure_anakin(self, measure: str, num_devices: int, num_envs: int, T: int) -> dict:
        """One Anakin row (benchmarks/anakin_throughput.py) on `num_devices` devices: PPO on
        --anakin_env with `num_envs` envs in all and rollouts of T steps."""
        t0 = time.perf_counter()
        r = anakin_throughput.measure_on(
            num_devices, env=self.args.anakin_env, num_envs=num_envs, unroll_length=T,
            seconds=self.args.seconds, sets=tuple(self.args.set), seed=self.args.seed,
            act_only=measure == "anakin_act")
        where = (" in this process" if r["process"] == "this" else
                 f" in a subprocess with {num_devices} faked CPU devices")
        detail = (f"{num_devices} device(s){where}, {1e3 * r['update_s']:.1f} ms per "
                  f"{T}x{num_envs} {'rollout' if measure == 'anakin_act' else 'update'}, "
                  f"compile {r['compile_s']:.0f}s")
        devices = ",".join(map(str, range(num_devices)))  # each device acts and learns
        row = dict(env=self.args.anakin_env, algo="ppo", torso="mlp", num_envs=num_envs,
                   actor_threads=0, actor_devices=devices, learner_devices=devices,
                   unroll_length=T, measure=measure, steps_per_s=round(r["sps"], 1),
                   backend=self.backend, load1=round(r["load1"], 2), cpus=os.cpu_count(),
                   host=self.host, time=time.strftime("%Y-%m-%d %H:%M"), detail=detail,
                   label=f"{measure}[{num_devices}dev]")
        return self._emit(row, f"T {T} on {num_devices} device(s)", t0)

    def _emit(self, row: dict, layout: str, t0: float) -> dict:
        """Prints the row's line, appends its CSV row and keeps it."""
        print(f"  {row['label']:<16s} {row['algo']:<8s} envs {row['num_envs']:>4d} {layout}: "
              f"{row['steps_per_s']:>10,.0f} steps/s  (load {row['load1']:.1f}, "
              f"{time.perf_counter() - t0:.0f}s) {row['detail']}", flush=True)
        if self.args.csv:
            with open(self.args.csv, "a", newline="") as f:
                csv.writer(f).writerow([row[c] for c in CSV_COLUMNS])
        self.rows.append(row)
        return row


def plot_study(rows: list[dict], path: str, title: str) -> None:
    """One panel per measure: steps/s vs total num_envs, a line per algo/threads/split."""
    import matplotlib
    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt
    shown = [m for m in measures.BENCHES if any(r["measure"] == m for r in rows)]
    cols = min(2, len(shown))  # 2 x 2 for all four: legends stay readable
    rows_ = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows_, cols, figsize=(6 * cols, 4.2 * rows_), squeeze=False)
    for ax in axes.flat[len(shown):]:
        ax.set_visible(False)
    for ax, m in zip(axes.flat, shown):
        lines: dict[str, list] = {}
        for r in rows:
            if r["measure"] != m:
                continue
            parts = ([] if m == "env_only" else [r["algo"]]) + \
                ([] if m == "learner" else [f"{r['actor_threads']} thr"]) + \
                ([] if m in ("env_only", "env_infer") else [f"learn {r['learner_devices']}"])
            lines.setdefault(" ".join(parts), []).append((r["num_envs"], r["steps_per_s"]))
        for label, pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(m)
        ax.set_xlabel("num_envs (total)")
        ax.set_ylabel("steps/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
