"""scripts/sweep.py's and scripts/plot.py's small pieces: grid syntax, seed statistics, the
benchmark CSV, legends. The sweep run end to end (child processes): tests/slow/scripts/."""
import csv

import matplotlib.image
import numpy as np
import pytest
from scipy import stats

from benchmarks import throughput
from benchmarks.harness import report
from scripts import plot, sweep
from scripts.analysis import rundir
from tests.helpers import micro_sweep_args


def test_long_legend_labels_are_wrapped_under_the_axes_and_short_ones_stay_inside():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    long_label = " ".join(f"agent.field_{i}=0.000{i}" for i in range(8))  # ~150 characters
    fig, (short_ax, long_ax) = plt.subplots(1, 2)
    short_ax.plot([0, 1], [0, 1], label="lr=1e-3")
    long_ax.plot([0, 1], [0, 1], label=long_label)
    long_ax.plot([0, 1], [1, 0], label=long_label + " seed=1")
    height = fig.get_figheight()
    plot.add_legend(short_ax)
    assert fig.get_figheight() == height  # a legend inside the axes needs no room
    plot.add_legend(long_ax, width=60)
    assert fig.get_figheight() > height + 0.17 * 6  # room for the legend's >= 6 lines
    fig.canvas.draw()
    short, long_ = short_ax.get_legend(), long_ax.get_legend()
    assert [t.get_text() for t in short.get_texts()] == ["lr=1e-3"]
    texts = [t.get_text() for t in long_.get_texts()]
    assert all("\n" in t and max(map(len, t.split("\n"))) <= 60 for t in texts), texts
    assert [t.replace("\n  ", " ") for t in texts] == [long_label, long_label + " seed=1"]
    renderer = fig.canvas.get_renderer()
    # Under the axes: the legend's top is below the axes' bottom; the short one is inside.
    assert long_.get_window_extent(renderer).y1 < long_ax.get_window_extent(renderer).y0
    inside = short_ax.get_window_extent(renderer)
    assert inside.contains(*short.get_window_extent(renderer).get_points().mean(axis=0))
    plt.close(fig)


@pytest.mark.parametrize("token, message", [
    ("agent.learning_rate", "expected field=value"),
    ("agent.learning_rate=1e-3,,5e-4", "empty value"),
    ("network.mlp_hidden_sizes=(64,64),(32,32", "unclosed bracket"),
    ("network.mlp_hidden_sizes=(64,64)),(32,)", "unbalanced"),
    ("seed=0,1", "--seeds"),
])
def test_bad_grid_tokens_are_named(token, message):
    with pytest.raises(sweep.SweepError, match=message) as err:
        sweep.parse_grid([token])
    assert repr(token) in str(err.value)


def test_grid_values_split_outside_brackets_and_unknown_fields_fail(tmp_path, capsys):
    assert sweep.parse_grid(["network.mlp_hidden_sizes=(64,64),(32,),[1, 2]"]) == [
        ("network.mlp_hidden_sizes", ["(64,64)", "(32,)", "[1, 2]"])]
    args = micro_sweep_args(tmp_path / "x")
    args[args.index("--grid") + 1] = "agent.learnin_rate=1e-3"
    with pytest.raises(SystemExit):
        sweep.main(args)
    assert "no field 'agent.learnin_rate'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing launched, nothing written


def test_seed_statistics():
    values = [1.0, 2.0, 4.0, 7.0]
    low, high = rundir.t_interval(values)
    half = stats.t.ppf(0.975, 3) * np.std(values, ddof=1) / 2
    assert (low, high) == pytest.approx((3.5 - half, 3.5 + half))
    assert rundir.t_interval([1.0]) is None
    assert rundir.iqm(values[:3]) is None
    assert rundir.iqm(values) == pytest.approx(3.0)  # the middle two of four
    assert rundir.iqm(list(range(8))) == pytest.approx(np.mean(range(2, 6)))


def test_benchmark_rows_and_study_plot(tmp_path):
    path = tmp_path / "b.csv"
    throughput.main(["--env", "CartPole-v1", "--algo", "ppo", "--num_envs", "8",
                    "--actor_threads", "1", "--seconds", "0.2", "--measures",
                     "env_only,env_infer", "--csv", str(path)])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == report.CSV_COLUMNS
    assert [(r["measure"], r["algo"]) for r in rows] == [("env_only", "-"),
                                                         ("env_infer", "ppo")]
    assert all(float(r["steps_per_s"]) > 0 and float(r["load1"]) >= 0 for r in rows)
    png = tmp_path / "study.png"
    throughput.plot_study([{**r, "num_envs": int(r["num_envs"]),
                           "steps_per_s": float(r["steps_per_s"])} for r in rows], str(png), "t")
    assert matplotlib.image.imread(str(png)).shape[0] > 100
