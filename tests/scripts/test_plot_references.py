"""scripts/plot.py --reference: published curves (CSV points read off a figure) drawn beside the
runs on the step axis, per env, without rescaling the runs; bad files named early; and the
reference files kept in docs/references/ load."""
from pathlib import Path

import numpy as np
import pytest

from scripts import plot
from scripts.analysis import references
from tests.fakes.run_dirs import write_run as _write_run

ROOT = Path(__file__).resolve().parents[2]
CSV = """# a comment line: where the points come from
label,env,step,value
ref A,Pong-v5,2000,-10
ref A,Pong-v5,0,-21
ref A,Pong-v5,1000,-15
ref A,Pong-v5,50000,20

ref B,Breakout-v5,0,1.5
ref B,Breakout-v5,50000,400
"""


def _reference_labels(ax) -> list[str]:
    return [line.get_label() for line in ax.get_lines() if "(reference)" in line.get_label()]


def test_references_load_by_label_and_env_sorted_by_step(tmp_path):
    path = tmp_path / "refs.csv"
    path.write_text(CSV)
    refs = references.load_references(str(path))
    assert sorted(refs) == [("ref A", "Pong-v5"), ("ref B", "Breakout-v5")]
    steps, values = refs[("ref A", "Pong-v5")]
    np.testing.assert_array_equal(steps, [0, 1000, 2000, 50000])
    np.testing.assert_array_equal(values, [-21, -15, -10, 20])
    # Without an env column a curve belongs to every env.
    path.write_text("step,value,label\n5,1.0,x\n")
    assert list(references.load_references(str(path))) == [("x", "")]


@pytest.mark.parametrize("text, message", [
    ("label,step\nx,1\n", r"columns \['label', 'step'\]; required \['label', 'step', 'value'\]"),
    ("label,step,value,seed\nx,1,2,0\n", r"optional \['env'\]"),
    ("# only a comment\n", "no header and no points"),
    ("label,step,value\n", "a header but no points"),
    ("label,step,value\nx,1,2\nx,2,high\n", r"refs.csv:3: step '2' and value 'high' must be "
                                            r"finite numbers"),
    ("label,step,value\nx,1,nan\n", r"refs.csv:2: .*finite"),
    ("label,step,value\nx,1\n", r"refs.csv:2: 2 fields, the header has 3"),
])
def test_bad_reference_files_are_named(tmp_path, text, message):
    path = tmp_path / "refs.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        references.load_references(str(path))


def test_cli_names_a_missing_or_bad_reference(tmp_path, capsys):
    _write_run(tmp_path / "runs" / "a", seed=0, final=1.0)
    with pytest.raises(SystemExit):
        plot.main([str(tmp_path / "runs"), "--reference", str(tmp_path / "nope.csv")])
    assert "nope.csv': no such file" in capsys.readouterr().err


def test_cli_refuses_one_curve_given_by_two_reference_files(tmp_path, capsys):
    _write_run(tmp_path / "runs" / "a", seed=0, final=1.0)
    (tmp_path / "one.csv").write_text(CSV)
    (tmp_path / "two.csv").write_text("label,env,step,value\nref A,Pong-v5,0,5\n")
    with pytest.raises(SystemExit):
        plot.main([str(tmp_path / "runs"), "--reference", str(tmp_path / "one.csv"),
                   "--reference", str(tmp_path / "two.csv")])
    err = capsys.readouterr().err
    assert "two.csv: curve ('ref A', 'Pong-v5') (label, env) is also in an earlier" in err


def test_reference_drawn_on_the_step_axis_only_keeping_the_runs_range(tmp_path, figures):
    (tmp_path / "refs.csv").write_text(CSV + "ref C,,0,3\nref C,,2000,4\n")
    for seed in (0, 1):  # Pong-v5 runs: ref B (Breakout-v5) is not theirs
        _write_run(tmp_path / "runs" / f"s{seed}", seed=seed, final=-12.0 + seed,
                   steps=2000)
    out = plot.main([str(tmp_path / "runs"), "--reference", str(tmp_path / "refs.csv"),
                     "--output", str(tmp_path / "curves.png")])
    assert Path(out).stat().st_size > 10_000
    step_ax, time_ax = figures[-1].axes[:2]
    assert _reference_labels(step_ax) == ["ref A (reference)", "ref C (reference)"]
    assert _reference_labels(time_ax) == []  # a reference's wall clock is another machine's
    # ref A runs to 50,000 steps; the runs end at 2,000 and keep the axis: ref A is cut at
    # its right edge (interpolated), so its far point (20) does not stretch the value axis
    # (ref C tops at 4).
    right = step_ax.get_xlim()[1]
    assert 2000 < right < 2500 and step_ax.get_ylim()[1] < 10, (right, step_ax.get_ylim())
    ref_a = next(line for line in step_ax.get_lines() if line.get_label() == "ref A (reference)")
    edge = -10 + 30 * (right - 2000) / 48000
    np.testing.assert_allclose(ref_a.get_xydata(),
                               [[0, -21], [1000, -15], [2000, -10], [right, edge]])
    assert [line.get_label() for line in step_ax.get_lines()][0] == "all runs (n=2)"
    plot.main([str(tmp_path / "runs" / "s0"), "--x", "step", "--output", str(tmp_path / "1.png")])
    assert figures[-1].axes[0].get_lines()[0].get_label() == "s0 (n=1)"  # one run: its dir
    # Runs of two envs in one (mean) plot: every reference.
    _write_run(tmp_path / "runs" / "breakout", seed=0, final=3.0, env="Breakout-v5")
    plot.main([str(tmp_path / "runs"), "--reference", str(tmp_path / "refs.csv"), "--x", "step",
               "--output", str(tmp_path / "both.png")])
    assert len(_reference_labels(figures[-1].axes[0])) == 3


def _iqm_panels(tmp_path, figures, references: str):
    """An IQM plot of 2 seeds on each of Breakout and Pong with `references` (CSV text):
    its Breakout and Pong panels (rows sorted by env)."""
    (tmp_path / "refs.csv").write_text(references)
    for env in ("Breakout-v5", "Pong-v5"):
        for seed in (0, 1):
            _write_run(tmp_path / "runs" / f"{env}-s{seed}", seed=seed, final=1.0 + seed,
                       env=env)
    plot.main([str(tmp_path / "runs"), "--aggregate", "iqm", "--reps", "100", "--x", "step",
               "--reference", str(tmp_path / "refs.csv"),
               "--output", str(tmp_path / "iqm.png")])
    return figures[-1].axes[:2]


def test_iqm_rows_draw_only_their_env_references(tmp_path, figures):
    breakout_ax, pong_ax = _iqm_panels(tmp_path, figures, CSV)
    assert _reference_labels(breakout_ax) == ["ref B (reference)"]
    assert _reference_labels(pong_ax) == ["ref A (reference)"]


def test_a_label_has_one_style_in_every_panel(tmp_path, figures):
    """A reference drawn in two panels looks the same in both, whatever else each panel draws
    (the style follows the label's place among all labels, not among a panel's)."""
    axes = _iqm_panels(tmp_path, figures,
                       CSV + "ref C,Pong-v5,0,-20\nref C,Pong-v5,50000,0\n"
                       "ref C,Breakout-v5,0,2\nref C,Breakout-v5,50000,300\n"
                       "ref 0,Breakout-v5,0,1\nref 0,Breakout-v5,50000,9\n")

    def styles(ax):
        return {line.get_label(): (line.get_marker(), line.get_color(), line.get_linestyle())
                for line in ax.get_lines() if "(reference)" in line.get_label()}
    breakout, pong = (styles(ax) for ax in axes)
    # ref C is third in the Breakout panel (ref 0, ref B, ref C) and second in Pong's.
    assert set(breakout) == {"ref 0 (reference)", "ref B (reference)", "ref C (reference)"}
    assert set(pong) == {"ref A (reference)", "ref C (reference)"}
    assert breakout["ref C (reference)"] == pong["ref C (reference)"]
    assert len(set(breakout.values()) | set(pong.values())) == 4  # four labels, four styles


@pytest.mark.parametrize("name", sorted(p.name for p in
                                        (ROOT / "docs" / "references").glob("*.csv")))
def test_the_kept_reference_files_load(name):
    refs = references.load_references(str(ROOT / "docs" / "references" / name))
    assert refs and all(len(steps) >= 4 and np.all(np.diff(steps) > 0)
                        for steps, _ in refs.values())
