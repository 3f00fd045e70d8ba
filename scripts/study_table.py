"""One Markdown table from a throughput study: benchmark rows and launch-to-first-update rows
grouped by their `label` (the layout), as scripts/gpu_study.sh writes them.

    python scripts/study_table.py BENCHMARK_CSV [STARTUP_CSV]
"""
from __future__ import annotations

import csv
import sys

MEASURES = ("env_only", "env_infer", "learner", "end_to_end")


def _rows(path: str) -> list[dict]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def table(bench_rows: list[dict], startup_rows: list[dict]) -> str:
    labels: list[str] = []
    for r in bench_rows + startup_rows:
        if r.get("label", "") not in labels:
            labels.append(r.get("label", ""))
    head = ("| layout | envs x threads | " + " | ".join(MEASURES)
            + " | end_to_end / env_only | first update (cold / warm cache) | load1 |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for label in labels:
        rows = {r["measure"]: r for r in bench_rows if r.get("label", "") == label}
        sps = {m: float(rows[m]["steps_per_s"]) for m in MEASURES if m in rows}
        any_row = next(iter(rows.values()), {})
        shape = (f"{any_row['num_envs']} x {any_row['actor_threads']}" if any_row else "")
        ratio = (f"{sps['end_to_end'] / sps['env_only']:.2f}"
                 if "end_to_end" in sps and "env_only" in sps else "")
        starts = [float(r["first_update_s"]) for r in startup_rows
                  if r.get("label", "") == label]
        first = " / ".join(f"{s:.1f} s" for s in starts)
        loads = [r["load1"] for r in rows.values()]
        cells = [label, shape, *(f"{sps[m]:,.0f}" if m in sps else "" for m in MEASURES),
                 ratio, first, max(loads, key=float) if loads else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    print(table(_rows(argv[0]), _rows(argv[1]) if len(argv) > 1 else []))


if __name__ == "__main__":
    main(sys.argv[1:])
