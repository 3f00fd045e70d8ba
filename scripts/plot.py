"""Learning curves from run directories: return vs env steps and vs wall clock, to a PNG.

    python -m scripts.plot runs/sweep-lr --output runs/sweep-lr/curves.png
    python -m scripts.plot runs/impala-CartPole-v1-s0-* runs/impala-CartPole-v1-s1-* \\
        --metric episode/return_mean --title "IMPALA CartPole"
    python -m scripts.plot runs/pong --reference docs/references/cleanrl_ppo_envpool_pong.csv
    python -m scripts.plot runs/a_s0 runs/a_s1 runs/b_s0 --label runs/a_s0="80 per update" \
        --label runs/a_s1="80 per update" --label runs/b_s0="640 per update"

Each argument is a run dir or a folder searched for run dirs (those with metrics.jsonl or
TensorBoard event files; metrics.jsonl is read when both exist). Runs are grouped into
settings: by the name given to their path with --label PATH=TEXT, else by the label a sweep
wrote (scripts/sweep.py), else by the config.json fields that differ between the runs (seed,
run_dir and similar excluded), else one setting per dir. Each setting is drawn as the mean
over its seeds, with the min-max range over seeds shaded (see `seed_band` for seeds of
different lengths).
--reference draws a published curve (points read off its figure, scripts/analysis/references.py)
as a dashed line on the step axis, so a run is compared with it at equal agent steps.
The wall-clock axis is training time (`rundir.training_time`): it counts from the creation of
the run's TensorBoard writer (before compilation), and for a run continued with
--config.resume each piece counts from its own writer's creation, so the pause between pieces
(a night, or a process restart's exit and imports) is left out.

Aggregates over seeds (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice",
with their `rliable` package). Runs are grouped by setting (every config field but the seed and
the env) and by env (config env.name):

    python -m scripts.plot runs/seeds --aggregate iqm --output iqm.png \\
        --profile profile.png --normalize atari_nature

--aggregate iqm draws, per setting and env, the interquartile mean (IQM) over seeds with a
shaded 95% stratified-bootstrap confidence interval, on a step grid where every seed has data
(up to the shortest seed's last step). --aggregate iqm, --profile and --table print a markdown
table of the final scores (summary.json, else the last logged point): setting, env, seeds, IQM,
95% CI, median, mean, min, max. --profile draws the performance profile (score distribution:
the fraction of runs scoring above tau) of the final scores, one line per setting over all its
envs, raw or min-max normalised by --normalize: a built-in table (atari_nature: random and
human scores of Mnih et al. 2015) or a JSON file {"Pong": {"random": -20.7, "reference": 9.3}}.
With --normalize, each setting on several envs also gets an "all envs" row (IQM over runs x
envs of the normalised scores). --at 1e6,2.5e6,5e6 prints those tables at the given agent
steps instead (each run's last point at or before the step; a run not yet there is left out,
with a note), and the profile is drawn at the last of them. Below 4 seeds the IQM trims
nothing (it is the mean); with one seed there is no interval (noted, drawn as the run itself).
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap

import numpy as np

from scripts.analysis import rundir
from scripts.analysis.references import draw_references, load_references
from scripts.analysis.scores import (NORMALIZE_TABLES, iqm_band, load_normalization, normalize,
                                     performance_profile, score_table)

AXES = {"step": "env steps", "time": "wall clock (minutes)"}
AGGREGATES = ("mean", "iqm")  # mean: mean over seeds, min-max shaded; iqm: IQM, 95% CI shaded
SHORT_LABEL = 40  # characters: longer legend labels go under the axes, wrapped


def group_curves(run_dirs: list[str], metric: str,
                 names: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """{setting label: [curve per seed]}, runs without the metric left out (with a note);
    `names` ({path: text}, --label) relabels the runs under each path."""
    labels = rundir.apply_names(rundir.labels(run_dirs), names or {})
    groups: dict[str, list[dict]] = {}
    for run in run_dirs:
        curve = rundir.load_curve(run, metric)
        if curve is None:
            print(f"plot: {run} has no {metric!r} yet; left out", file=sys.stderr)
            continue
        groups.setdefault(labels[run], []).append(curve)
    return groups


def seed_band(curves: list[dict], x: str, points: int = 200) -> tuple[np.ndarray, ...]:
    """(grid, mean, min, max) over seeds, the curves interpolated on a common x grid.

    A seed enters at its first logged point and holds its last value after its end (a run
    that finished or stopped early keeps its final return), so seeds that started late (slow
    compile) or ended early do not cut the other curves short.
    """
    if len(curves) == 1:  # nothing to interpolate: the run's own points
        c = curves[0]
        return c[x], c["value"], c["value"], c["value"]
    grid = np.linspace(min(c[x][0] for c in curves), max(c[x][-1] for c in curves), points)
    ys = np.stack([np.interp(grid, c[x], c["value"], left=np.nan) for c in curves])
    return grid, np.nanmean(ys, 0), np.nanmin(ys, 0), np.nanmax(ys, 0)


def group_runs(run_dirs: list[str],
               names: dict[str, str] | None = None) -> dict[tuple[str, str], list[str]]:
    """{(setting, env): run dirs}: the setting is every config field but the seed and the env,
    or the --label name given to the runs' path (`names`)."""
    labels = rundir.apply_names(rundir.labels(run_dirs, exclude=(rundir.ENV_FIELD,)), names or {})
    groups: dict[tuple[str, str], list[str]] = {}
    for run in run_dirs:
        groups.setdefault((labels[run], rundir.env_of(run)), []).append(run)
    return groups


def final_scores(groups: dict[tuple[str, str], list[str]], metric: str,
                 at: float | None = None) -> dict[tuple[str, str], np.ndarray]:
    """{(setting, env): final `metric` per seed}, or its value at agent step `at`
    (`rundir.value_at`); runs without it left out (with a note)."""
    out = {}
    for key, runs in groups.items():
        values = []
        for run in runs:
            value = (rundir.final_value(run, metric) if at is None
                     else rundir.value_at(run, metric, at))
            if value is None:
                where = "yet" if at is None else f"at step {at:,.0f} (not there yet)"
                print(f"plot: {run} has no {metric!r} {where}; left out", file=sys.stderr)
            else:
                values.append(value)
        if values:
            out[key] = np.asarray(values, float)
    return out


def add_legend(ax, width: int = 90) -> None:
    """The legend of `ax`: inside it for short labels; under it, each label wrapped at `width`
    characters, when a label is long. Labels built from config fields list every field that
    differs (four settings can need 150 characters each); inside the axes, tight_layout
    would shrink the curves to a sliver to make room. Saved with bbox_inches="tight"."""
    handles, labels = ax.get_legend_handles_labels()
    if max(map(len, labels), default=0) <= SHORT_LABEL:
        ax.legend(fontsize=8, loc="best")
        return
    labels = [textwrap.fill(label, width, subsequent_indent="  ") for label in labels]
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.2),
              frameon=False)
    # The figure grows by the legend's height (8-point lines, ~0.17 inch each), else
    # tight_layout makes that room by shrinking the axes.
    lines = sum(label.count("\n") + 1 for label in labels)
    ax.figure.set_figheight(ax.figure.get_figheight() + 0.17 * lines + 0.3)


def title_above(fig, title: str) -> None:
    """`title` in a band of its own at the top of `fig`, the axes laid out below it. A suptitle
    sits at a fixed fraction of the figure's height, so in a tall figure (five rows of panels)
    plain tight_layout let it cover the first row's top."""
    band = 0.5 / fig.get_figheight()  # inches -> figure fraction
    fig.suptitle(title, y=1 - 0.1 / fig.get_figheight(), va="top")
    fig.tight_layout(rect=(0, 0, 1, 1 - band))


def plot_profile(finals: dict[tuple[str, str], np.ndarray], output: str, xlabel: str,
                 reps: int = 2000, seed: int = 0, title: str = "") -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    values = np.concatenate(list(finals.values()))
    low, high = float(values.min()), float(values.max())
    pad = 0.05 * (high - low) or 1.0  # one distinct score: still a visible step
    taus = np.linspace(low - pad, high + pad, 101)
    profiles, cis = performance_profile(finals, taus, reps, seed)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    envs = sorted({e for _, e in finals})
    plot_utils.plot_performance_profiles(
        profiles, taus, performance_profile_cis=cis, ax=ax, xlabel=xlabel,
        ylabel=r"fraction of runs with score > $\tau$", labelsize="medium",
        ticklabelsize="medium")
    add_legend(ax)  # the same setting labels as the curves
    n = {s: sum(len(v) for (k, _), v in finals.items() if k == s) for s in profiles}
    low_n, high_n = min(n.values()), max(n.values())
    runs = f"{low_n}" if low_n == high_n else f"{low_n}-{high_n}"
    ax.set_title(title or f"performance profile over {', '.join(envs)} ({runs} runs per "
                 "setting; 95% CI shaded)", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110, bbox_inches="tight")  # keeps a legend under the axes
    plt.close(fig)
    return output


def plot_iqm(groups: dict[tuple[str, str], list[dict]], metric: str, output: str,
             title: str = "", axes: tuple[str, ...] = ("step", "time"), reps: int = 2000,
             seed: int = 0, references: dict | None = None) -> str:
    """One row per env, one column per x axis; per setting the IQM over seeds, 95% CI shaded;
    `references` (scripts/analysis/references.py) on the step axis of their env's row."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({e for _, e in groups})
    settings = sorted({s for s, _ in groups})
    fig, subplots = plt.subplots(len(envs), len(axes), squeeze=False,
                                 figsize=(6.5 * len(axes), 4.5 * len(envs)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, env in zip(subplots, envs):
        for ax, x in zip(row, axes):
            for i, setting in enumerate(settings):
                curves = groups.get((setting, env))
                if not curves:
                    continue
                grid, mid, low, high = iqm_band(curves, x, reps, seed)
                scale = 60.0 if x == "time" else 1.0
                color = colors[i % len(colors)]
                ax.plot(grid / scale, mid, color=color, label=f"{setting} (n={len(curves)})")
                if low is not None:
                    ax.fill_between(grid / scale, low, high, color=color, alpha=0.2,
                                    linewidth=0)
            if x == "step" and references:
                draw_references(ax, references, env)
            if x == "time":
                ax.set_xlim(left=0)
            ax.set_xlabel(AXES[x])
            ax.set_ylabel(f"{metric}\n{env}")
            ax.grid(alpha=0.3)
        add_legend(row[0])
    title_above(fig, title or f"{metric}: IQM over seeds, 95% stratified-bootstrap CI shaded")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110, bbox_inches="tight")  # keeps a legend under the axes
    plt.close(fig)
    return output


def _iqm_notes(groups: dict[tuple[str, str], list[dict]]) -> list[str]:
    notes = []
    for (setting, env), curves in sorted(groups.items()):
        if len(curves) == 1:
            notes.append(f"{setting} on {env}: 1 seed; drawn as that run, no confidence band")
            continue
        ends = [c["step"][-1] for c in curves]
        if min(ends) < max(ends):
            notes.append(f"{setting} on {env}: IQM curve ends at step {min(ends):,.0f}, where "
                         f"its shortest seed ends (longest: {max(ends):,.0f})")
    return notes


def plot(groups: dict[str, list[dict]], metric: str, output: str, title: str = "",
         axes: tuple[str, ...] = ("step", "time"), references: dict | None = None,
         env: str | None = None) -> str:
    """One panel per x axis; per setting the mean over seeds, min-max shaded; `references`
    (scripts/analysis/references.py) on the step axis (a reference's wall clock is another
    machine's), only `env`'s and env-less ones when `env` (the runs' one env) is given."""
    import matplotlib
    matplotlib.use("Agg")  # files only; no display needed (CI, SSH)
    import matplotlib.pyplot as plt

    fig, subplots = plt.subplots(1, len(axes), figsize=(6.5 * len(axes), 4.5), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, x in zip(subplots[0], axes):
        for i, (label, curves) in enumerate(sorted(groups.items())):
            grid, mean, low, high = seed_band(curves, x)
            if x == "time":
                grid = grid / 60.0
            color = colors[i % len(colors)]
            ax.plot(grid, mean, color=color, label=f"{label} (n={len(curves)})")
            if len(curves) > 1:
                ax.fill_between(grid, low, high, color=color, alpha=0.2, linewidth=0)
        if x == "step" and references:
            draw_references(ax, references, env)
        if x == "time":
            ax.set_xlim(left=0)  # from the run's start: the gap before the first point is compile
        ax.set_xlabel(AXES[x])
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    add_legend(subplots[0][0])
    title_above(fig, title or f"{metric}: mean over seeds, min-max shaded")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    fig.savefig(output, dpi=110, bbox_inches="tight")  # keeps a legend under the axes
    plt.close(fig)
    return output


def main(argv=None) -> str:
    p = argparse.ArgumentParser(
        prog="python -m scripts.plot",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("paths", nargs="+", help="run dirs, or folders holding run dirs")
    p.add_argument("--metric", default="episode/return_mean", help="scalar to plot")
    p.add_argument("--output", default="",
                   help="PNG path (default: <first path>/curves.png)")
    p.add_argument("--x", default="step,time", help="x axes: step, time or step,time")
    p.add_argument("--title", default="")
    p.add_argument("--aggregate", default="mean", choices=AGGREGATES,
                   help="mean: mean over seeds, min-max shaded; iqm: interquartile mean over "
                        "seeds, 95%% stratified-bootstrap CI shaded, per setting and env")
    p.add_argument("--profile", default="", metavar="PNG",
                   help="also draw the performance profile of the final scores to this PNG")
    p.add_argument("--normalize", default="", metavar="TABLE",
                   help=f"min-max normalise final scores for the table and the profile: "
                        f"{', '.join(NORMALIZE_TABLES)} or a JSON file")
    p.add_argument("--table", action="store_true",
                   help="print the final-score table (implied by --aggregate iqm, --profile)")
    p.add_argument("--at", default="", metavar="STEPS",
                   help="tables of the score at these agent steps (comma-separated, e.g. "
                        "1e6,2.5e6,5e6: each run's last point at or before the step) instead "
                        "of the final scores; the profile takes the last of them")
    p.add_argument("--reps", type=int, default=2000,
                   help="bootstrap resamples (rliable uses 50000 for final intervals: slower)")
    p.add_argument("--bootstrap_seed", type=int, default=0)
    p.add_argument("--reference", action="append", default=[], metavar="CSV",
                   help="a published curve to draw on the step axis (label,step,value[,env] "
                        "points read off its figure; docs/references/); repeatable")
    p.add_argument("--label", action="append", default=[], metavar="PATH=TEXT",
                   help="legend text for the runs in PATH (a run dir or a folder of them) "
                        "instead of the config fields that differ; runs given the same text "
                        "are one setting; repeatable")
    # Intermixed: run dirs may come between options (a run dir, then its --label, ...).
    args = p.parse_intermixed_args(argv)
    axes = tuple(a.strip() for a in args.x.split(","))
    bad = [a for a in axes if a not in AXES]
    if bad:
        p.error(f"--x: unknown axis {bad[0]!r}; allowed: {', '.join(AXES)}")
    try:
        at_steps = [float(v) for v in args.at.split(",") if v.strip()]
    except ValueError:
        p.error(f"--at {args.at!r}: give agent steps as numbers, comma-separated (1e6,2.5e6)")
    if any(not np.isfinite(v) or v < 0 for v in at_steps):
        p.error(f"--at {args.at!r}: steps must be finite and >= 0")
    if args.reps < 100:
        p.error(f"--reps={args.reps}: too few resamples for a 95% interval; use >= 100")
    try:
        table = load_normalization(args.normalize) if args.normalize else None
        runs = rundir.find_runs(args.paths)
        names = rundir.parse_names(args.label)
        rundir.apply_names({run: "" for run in runs}, names)  # a bad PATH is named here
        references = {}
        for path in args.reference:
            curves = load_references(path)
            clash = sorted(set(curves) & set(references))
            if clash:  # one curve would silently replace the other
                raise ValueError(f"--reference {path}: curve {clash[0]} (label, env) is also "
                                 f"in an earlier --reference file; give it another label")
            references.update(curves)
    except (FileNotFoundError, ValueError) as e:
        p.error(str(e))
    if not runs:
        p.error(f"no run dirs (metrics.jsonl or events.out.tfevents.*) under {args.paths}")
    output = args.output or os.path.join(args.paths[0], "curves.png")
    boot = dict(reps=args.reps, seed=args.bootstrap_seed)
    if args.aggregate == "iqm":
        by_env = {}
        for key, dirs in group_runs(runs, names).items():
            curves = [c for c in (rundir.load_curve(d, args.metric) for d in dirs) if c]
            if curves:
                by_env[key] = curves
        if not by_env:
            p.error(f"none of the {len(runs)} runs logged {args.metric!r}")
        plot_iqm(by_env, args.metric, output, args.title, axes, **boot, references=references)
        for note in _iqm_notes(by_env):
            print(f"plot: note: {note}")
        n_runs, n_groups = sum(len(c) for c in by_env.values()), len(by_env)
    else:
        groups = group_curves(runs, args.metric, names)
        if not groups:
            p.error(f"none of the {len(runs)} runs logged {args.metric!r}")
        envs = {rundir.env_of(run) for run in runs}
        plot(groups, args.metric, output, args.title, axes, references=references,
             env=envs.pop() if len(envs) == 1 else None)
        n_runs, n_groups = sum(len(c) for c in groups.values()), len(groups)
    print(f"plot: {n_runs} runs in {n_groups} setting(s) -> {output}")
    if args.aggregate == "iqm" or args.profile or args.table or at_steps:
        unit = args.metric
        if table is not None:
            unit = (f"{args.metric} normalised ({os.path.basename(args.normalize)}: "
                    "0 random, 1 reference)")
        for at in at_steps or [None]:
            finals = final_scores(group_runs(runs, names), args.metric, at)
            if table is not None:
                try:
                    finals = {k: normalize(v, k[1], table, args.normalize)
                              for k, v in finals.items()}
                except ValueError as e:
                    p.error(str(e))
            if not finals:
                print(f"\nno run has {args.metric!r} at step {at:,.0f}\n")
                continue
            text, _, notes = score_table(finals, overall=table is not None, **boot)
            where = "final" if at is None else f"at step {at:,.0f},"
            print(f"\n{where} {unit}, over seeds:\n\n{text}\n")
            for note in notes:
                print(f"note: {note}")
        if args.profile and finals:
            plot_profile(finals, args.profile, unit, **boot)
            print(f"plot: performance profile of {sum(len(v) for v in finals.values())} runs "
                  f"-> {args.profile}")
    return output


if __name__ == "__main__":
    main()
