"""The final-score table of finished runs (scripts/sweep.py's, for the runs a sweep launched
and for `sweep.py table PATH...`): per setting, the mean over its finished seeds with a 95%
t-interval, the IQM, each seed's value; as markdown and as CSV. A run that diverged
(non-finite updates: `diverged` in its summary.json) is finished but not counted: its setting's
row says how many, and a line under the table names them."""
from __future__ import annotations

import csv
import os

from scripts.analysis import rundir


def finished(run_dir: str) -> bool:
    """summary.json exists and no signal stopped the run early (Ctrl-C and SIGTERM also write
    one, with `stopped_by` set: those runs resume)."""
    summary = rundir.read_json(os.path.join(run_dir, "summary.json"))
    return summary is not None and not summary.get("stopped_by")


def diverged(run_dir: str) -> bool:
    """The run (or population member) stopped on non-finite updates: summary.json says so."""
    summary = rundir.read_json(os.path.join(run_dir, "summary.json")) or {}
    return bool(summary.get("diverged"))


def final_value(run_dir: str, metric: str) -> float:
    summary = rundir.read_json(os.path.join(run_dir, "summary.json")) or {}
    return float(summary.get(metric, float("nan")))


def table(runs: list, metric: str, seeds: int | None = None) -> tuple[str, list[dict]]:
    """Markdown table of the final metric per setting over its finished seeds, and its rows.
    `runs`: objects with `label` and `run_dir` (sweep.Run). `seeds`: the runs each setting
    should have (the sweep's --seeds); None: the runs given."""
    rows = []
    for label in dict.fromkeys(r.label for r in runs):  # settings in grid order
        mine = [r for r in runs if r.label == label]
        lost = [r.run_dir for r in mine if finished(r.run_dir) and diverged(r.run_dir)]
        values = [final_value(r.run_dir, metric) for r in mine
                  if finished(r.run_dir) and r.run_dir not in lost]
        values = [v for v in values if v == v]  # a run with no finished episode has no return
        ci, iqm = rundir.t_interval(values), rundir.iqm(values)
        rows.append({"setting": label, "seeds": len(values), "of": seeds or len(mine),
                     "mean": sum(values) / len(values) if values else None,
                     "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
                     "iqm": iqm, "values": values, "diverged": lost})
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    lines = [f"| setting | seeds | {metric} mean | 95% CI (t) | IQM | per seed |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        ci = f"[{f(r['ci_low'])}, {f(r['ci_high'])}]" if r["ci_low"] is not None else "-"
        lost = f" ({len(r['diverged'])} diverged)" if r["diverged"] else ""
        lines.append(f"| {r['setting']} | {r['seeds']}/{r['of']}{lost} | {f(r['mean'])} | "
                     f"{ci} | {f(r['iqm'])} | {', '.join(f'{v:.2f}' for v in r['values'])} |")
    lost = [d for r in rows for d in r["diverged"]]
    if lost:
        lines.append(f"\nnot counted, diverged (non-finite updates; `diverged` in their "
                     f"summary.json): {', '.join(lost)}")
    return "\n".join(lines), rows


def write_csv(path: str, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["setting", "seeds", "mean", "ci_low", "ci_high", "iqm", "values",
                    "diverged"])
        for r in rows:
            w.writerow([r["setting"], r["seeds"]] +
                       ["" if r[k] is None else f"{r[k]:.6g}"
                        for k in ("mean", "ci_low", "ci_high", "iqm")] +
                       [" ".join(f"{v:.6g}" for v in r["values"]), len(r["diverged"])])
