"""One Markdown table from a throughput study: benchmarks/throughput.py CSVs, one per layout, and
the launch-to-first-update rows of benchmarks/startup_time.py with the same labels, as
benchmarks/gpu/study.sh writes them.

    python -m benchmarks.study_table [--startup STARTUP_CSV] LABEL=BENCHMARK_CSV ...
"""
from __future__ import annotations

import argparse
import csv

MEASURES = ("env_only", "env_infer", "learner", "end_to_end")


def _rows(path: str) -> list[dict]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def table(benches: dict[str, list[dict]], startup_rows: list[dict]) -> str:
    """Rows: one per label. The newest row of each measure counts (a rerun replaces)."""
    head = ("| layout | envs x threads | " + " | ".join(MEASURES)
            + " | end_to_end / env_only | first update (cold / warm cache) | max load1 |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for label, bench_rows in benches.items():
        rows = {r["measure"]: r for r in bench_rows}
        sps = {m: float(rows[m]["steps_per_s"]) for m in MEASURES if m in rows}
        any_row = next(iter(rows.values()), None)
        shape = (f"{any_row['num_envs']} x {any_row['actor_threads']}" if any_row else "")
        ratio = (f"{sps['end_to_end'] / sps['env_only']:.2f}"
                 if "end_to_end" in sps and "env_only" in sps else "")
        starts = [float(r["first_update_s"]) for r in startup_rows if r.get("label") == label]
        loads = [float(r["load1"]) for r in rows.values()]
        cells = [label, shape, *(f"{sps[m]:,.0f}" if m in sps else "" for m in MEASURES),
                 ratio, " / ".join(f"{s:.1f} s" for s in starts),
                 f"{max(loads):.1f}" if loads else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.study_table",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--startup", default="", help="benchmarks/startup_time.py --csv output")
    p.add_argument("benches", nargs="+", metavar="LABEL=CSV")
    args = p.parse_args(argv)
    benches = {}
    for item in args.benches:
        label, eq, path = item.partition("=")
        if not eq:
            p.error(f"{item!r}: expected LABEL=path/to/benchmark.csv")
        benches[label] = _rows(path)
    print(table(benches, _rows(args.startup) if args.startup else []))


if __name__ == "__main__":
    main()
