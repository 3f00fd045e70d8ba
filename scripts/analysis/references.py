"""Published reference curves for `python -m scripts.plot --reference`: points read off a
paper's or a repository's figure (most publish curves only as images), kept as CSV beside the docs.

A file has the columns `label,step,value` and optionally `env`; lines starting with `#` are
comments (say there where the points come from and how precisely they were read):

    # cleanrl ppo_atari_envpool.py, Pong-v5, read off docs/rl-algorithms/ppo/Pong.png
    label,env,step,value
    cleanrl PPO (envpool),Pong-v5,0,-20.4
    cleanrl PPO (envpool),Pong-v5,1000000,-11.3

`step` counts agent steps, as the runs' logs do. A reference with an `env` is drawn only beside
that env's curves: in its row of an --aggregate iqm plot, and in a mean plot whose runs share
one env (a mean plot over several envs draws every reference).
"""
from __future__ import annotations

import csv
import os

import numpy as np

REQUIRED = ("label", "step", "value")
OPTIONAL = ("env",)


def load_references(path: str) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """{(label, env or ""): (steps, values)} from one CSV, each curve sorted by step."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--reference {path!r}: no such file")
    with open(path, newline="") as f:
        rows = [(n, line) for n, line in enumerate(f, 1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise ValueError(f"--reference {path!r}: no header and no points")
    header_line, header = rows[0][0], next(csv.reader([rows[0][1]]))
    header = [h.strip() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if missing or unknown:
        raise ValueError(f"--reference {path}:{header_line}: columns {header}; required "
                         f"{list(REQUIRED)}, optional {list(OPTIONAL)}")
    points: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for n, line in rows[1:]:
        cells = [c.strip() for c in next(csv.reader([line]))]
        if len(cells) != len(header):
            raise ValueError(f"--reference {path}:{n}: {len(cells)} fields, the header has "
                             f"{len(header)}")
        row = dict(zip(header, cells))
        try:
            step, value = float(row["step"]), float(row["value"])
        except ValueError:
            step = value = float("nan")
        if not (np.isfinite(step) and np.isfinite(value)):
            raise ValueError(f"--reference {path}:{n}: step {row['step']!r} and value "
                             f"{row['value']!r} must be finite numbers")
        points.setdefault((row["label"], row.get("env", "")), []).append((step, value))
    if not points:
        raise ValueError(f"--reference {path!r}: a header but no points")
    out = {}
    for key, pts in points.items():
        steps, values = np.asarray(sorted(pts), float).T
        out[key] = (steps, values)
    return out


def draw_references(ax, references: dict, env: str | None = None) -> None:
    """Grey-scale lines with markers on a step axis (a shade, a marker and a dash pattern per
    label, so up to 3 x 4 x 3 labels stay apart); `env` set: only that env's and env-less
    references. A label has the same style in every panel (its place among all the labels
    given, not among those a panel draws), so one reference reads the same across a figure.
    The axis keeps the runs' step range: a reference to 50M steps would squash a 2M-step run
    into its left edge."""
    shades, markers, dashes = ("0.0", "0.4", "0.65"), ("o", "s", "^", "D"), ("--", ":", "-.")
    xlim = ax.get_xlim() if ax.has_data() else None
    style = {label: i for i, label in enumerate(sorted({label for label, _ in references}))}
    drawn = [(label, curve) for (label, ref_env), curve in sorted(references.items())
             if env is None or not ref_env or ref_env == env]
    for label, (steps, values) in drawn:
        i = style[label]
        if xlim is not None and steps[-1] > xlim[1]:
            # Cut at the axis' right edge (interpolated there), so points far beyond the runs
            # do not stretch the value axis either.
            keep, edge = steps < xlim[1], np.interp(xlim[1], steps, values)
            steps, values = np.append(steps[keep], xlim[1]), np.append(values[keep], edge)
        ax.plot(steps, values, linestyle=dashes[i // 12 % 3], marker=markers[i // 3 % 4],
                markersize=3.5, linewidth=1.2, color=shades[i % 3], label=f"{label} (reference)")
    if xlim is not None:
        ax.set_xlim(xlim)
