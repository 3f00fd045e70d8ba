"""scripts/plot.py --label PATH=TEXT: the legend names a setting as the user says instead of
listing the config fields that differ; runs given the same name are one setting (their seeds
pooled), in the mean plot, the IQM plot and the final-score table; bad specs named early."""
import pytest

from scripts import plot
from tests.fakes.run_dirs import write_run


def _legend(ax) -> list[str]:
    return [line.get_label() for line in ax.get_lines()]


@pytest.fixture
def runs(tmp_path):
    """Three runs of different learning rates: a0, a1 (1e-3, 5e-4) and b0 (2e-4), in a/ and b/."""
    write_run(tmp_path / "a" / "a0", seed=0, final=1.0, lr=1e-3)
    write_run(tmp_path / "a" / "a1", seed=1, final=3.0, lr=5e-4)
    write_run(tmp_path / "b" / "b0", seed=0, final=10.0, lr=2e-4)
    return tmp_path


def test_named_folders_and_runs_are_settings_in_the_legend(runs, figures):
    out = str(runs / "curves.png")
    plot.main([str(runs), "--x", "step", "--output", out])
    assert _legend(figures[-1].axes[0]) == [  # without names: the differing field
        "agent.learning_rate=0.0002 (n=1)", "agent.learning_rate=0.0005 (n=1)",
        "agent.learning_rate=0.001 (n=1)"]
    # A folder's name pools its runs as seeds of one setting; a run dir is named alone.
    plot.main([str(runs), "--x", "step", "--output", out, "--label", f"{runs / 'a'}=small batch",
               "--label", f"{runs / 'b' / 'b0'}=big batch"])
    ax = figures[-1].axes[0]
    assert _legend(ax) == ["big batch (n=1)", "small batch (n=2)"]
    small = ax.get_lines()[1].get_ydata()
    assert small[-1] == pytest.approx(2.0)  # the mean of a0 (1) and a1 (3) at the end
    # Unnamed runs keep their field labels beside the named ones.
    plot.main([str(runs), "--x", "step", "--output", out, "--label", f"{runs / 'b'}=big"])
    assert _legend(figures[-1].axes[0]) == [
        "agent.learning_rate=0.0005 (n=1)", "agent.learning_rate=0.001 (n=1)", "big (n=1)"]


def test_names_group_the_iqm_plot_and_the_table(runs, figures, capsys):
    plot.main([str(runs), "--aggregate", "iqm", "--reps", "100", "--x", "step",
               "--output", str(runs / "iqm.png"), "--label", f"{runs / 'a'}=A",
               "--label", f"{runs / 'b'}=B"])
    assert _legend(figures[-1].axes[0]) == ["A (n=2)", "B (n=1)"]
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| A ")]
    assert len(rows) == 1 and "| 2 |" in rows[0], rows  # one row, two seeds


@pytest.mark.parametrize("spec, message", [
    ("no-equals-sign", "expected PATH=TEXT"),
    ("=text", "expected PATH=TEXT"),
    ("{runs}/a=  ", "expected PATH=TEXT"),
    ("{runs}/missing=x", "no run dir is"),
])
def test_bad_labels_are_named(runs, capsys, spec, message):
    spec = spec.format(runs=runs)
    with pytest.raises(SystemExit):
        plot.main([str(runs), "--output", str(runs / "x.png"), "--label", spec])
    err = capsys.readouterr().err
    assert message in err and "--label" in err, err


def test_a_run_named_twice_is_refused(runs, capsys):
    with pytest.raises(SystemExit):
        plot.main([str(runs), "--output", str(runs / "x.png"), "--label", f"{runs / 'a'}=A",
                   "--label", f"{runs / 'a' / 'a0'}=A0"])
    err = capsys.readouterr().err
    assert "is under both" in err and "a0" in err, err


def test_float_fields_read_as_written_not_as_their_repr(tmp_path, figures):
    write_run(tmp_path / "x0", seed=0, final=1.0, lr=3 * 2e-4)  # 0.0006000000000000001
    write_run(tmp_path / "x1", seed=0, final=2.0, lr=1e-3)
    plot.main([str(tmp_path), "--x", "step", "--output", str(tmp_path / "f.png")])
    assert _legend(figures[-1].axes[0]) == [
        "agent.learning_rate=0.0006 (n=1)", "agent.learning_rate=0.001 (n=1)"]


def test_run_dirs_between_options(runs, figures):
    """Each run dir followed by its --label, as one writes a comparison by hand."""
    out = str(runs / "curves.png")
    plot.main([str(runs / "a"), "--label", f"{runs / 'a'}=small", str(runs / "b"),
               "--label", f"{runs / 'b'}=big", "--x", "step", "--output", out])
    assert _legend(figures[-1].axes[0]) == ["big (n=1)", "small (n=2)"]
