"""scripts/driving_table.py: `export` on run dirs written here (one row per evaluation, the
training view at that update, the rows of other tasks kept, a run without the crash rate or
without evaluations refused saying what to set) and the baselines. The docs' tables recomputed
from the committed CSV: tests/slow/scripts/test_driving_tables.py."""
import json

import pytest

from scripts import driving_table


def _run(path, seed, task="HighwayFast-v0", crash=True, evaluations=True):
    """A single-seed run dir: updates of 100 steps with training rows, an evaluation every 2."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"seed": seed, "env": {"name": task},
                                                  "eval_policy": "sample"}))
    with open(path / "metrics.jsonl", "w") as f:
        for update in range(1, 5):
            step = 100 * update
            row = {"step": step, "time": 1000.0 + update, "episode/return_mean": 10.0 + update,
                   **({"episode/crashed": 0.5} if crash else {})}
            f.write(json.dumps(row) + "\n")
            if evaluations and update % 2 == 0:
                f.write(json.dumps({"step": step, "time": 1000.5 + update,
                                    "eval/return_mean": 20.0 + update + seed,
                                    "eval/speed": 25.0, "eval/length_mean": 30.0,
                                    **({"eval/crashed": 0.1 * update} if crash else {})})
                        + "\n")


def test_export_writes_one_row_per_evaluation_and_keeps_other_tasks(tmp_path):
    path = tmp_path / "driving.csv"
    path.write_text(",".join(driving_table.FIELDS) + "\n"
                    "Parking-v0,0,100,greedy,1,,0.5,1,50,1,,0,5.0,abc\n"
                    "HighwayFast-v0,9,100,greedy,1,0,,1,30,1,0,,5.0,abc\n")
    for seed in (0, 1):
        _run(tmp_path / f"s{seed}", seed)
    rows = driving_table.export([str(tmp_path / "s0"), str(tmp_path / "s1")], str(path),
                                "deadbeef")
    assert [(r["seed"], r["step"]) for r in rows] == [(0, 200), (0, 400), (1, 200), (1, 400)]
    first = rows[0]
    assert first["eval_return"] == 22.0 and first["eval_crash_rate"] == 0.2
    assert first["eval_success_rate"] == "" and first["train_return"] == 12.0
    assert first["train_s"] == 1.0 and first["commit"] == "deadbeef"
    assert first["eval_policy"] == "sample" and first["eval_length"] == 30.0
    kept = driving_table.read(str(path))
    # HighwayFast's old rows replaced by the new runs', Parking's kept.
    assert [(r["task"], r["seed"]) for r in kept] == [("HighwayFast-v0", "0")] * 2 + [
        ("HighwayFast-v0", "1")] * 2 + [("Parking-v0", "0")]
    text = driving_table.table(kept)
    assert "| 400 | 2 | 24.50 [24.00, 25.00] | 0.40 [0.40, 0.40] |" in text
    assert "HighwayFast-v0, evaluation by the sample policy" in text
    assert "Parking-v0, evaluation by the greedy policy" in text
    fast, parking = [line for line in text.splitlines() if line.startswith("| env steps")]
    # Parking's success-rate columns (evaluation and training), its table only.
    assert "success rate" not in fast and parking.count("success rate") == 2


@pytest.mark.parametrize("what,kwargs", [
    ("no evaluation", dict(evaluations=False)), ("no crash rate", dict(crash=False))])
def test_export_refuses_a_run_without_what_the_table_needs(tmp_path, what, kwargs):
    _run(tmp_path / "run", 0, **kwargs)
    with pytest.raises(SystemExit, match="eval_every_updates" if "evaluation" in what
                       else "episode_metrics=crashed:max"):
        driving_table.export([str(tmp_path / "run")], str(tmp_path / "out.csv"), "x")


def test_export_refuses_a_path_that_is_not_a_run_directory(tmp_path):
    log = tmp_path / "s0.log"  # what `runs/x/s*` also matches beside the run dirs
    log.write_text("training log")
    with pytest.raises(SystemExit, match="is not a run directory"):
        driving_table.export([str(log)], str(tmp_path / "out.csv"), "x")


def test_the_baselines_play_whole_first_games_of_each_policy():
    text = driving_table.baselines("HighwayFast-v0", episodes=16)
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| always")
            or line.startswith("| uniformly")]
    assert [r[0] for r in rows] == ["| uniformly random"] + [
        f"| always {a}" for a in driving_table.META_ACTIONS]
    for row in rows:
        mean = float(row[1].split(" ± ")[0])
        crash = float(row[2])
        # 30 steps at most, a normalised reward in [0, 1] per step; a share of 16 games.
        assert 0.0 < mean <= 30.0 and 0.0 <= crash <= 1.0
        assert abs(crash * 16 - round(crash * 16)) < 0.01  # printed with 3 decimals
        assert 1.0 <= float(row[4].rstrip(" |")) <= 30.0  # steps per game
    speeds = {r[0]: float(r[3]) for r in rows}
    # The meta-actions are highway-env's: always FASTER drives faster than always SLOWER.
    assert speeds["| always FASTER"] > speeds["| always SLOWER"] + 3.0


def test_the_baselines_of_a_box_action_task_and_its_success_rate():
    text = driving_table.baselines("Parking-v0", episodes=8)
    assert "| success rate |" in text
    rows = {line.split(" | ")[0]: line.split(" | ") for line in text.splitlines()
            if line.startswith("| u") or line.startswith("| a")}
    assert set(rows) == {"| uniformly random", "| always zero"}
    # Standing still never crashes and never parks: the game runs its 500 steps.
    zero = rows["| always zero"]
    assert float(zero[2]) == 0.0 and float(zero[3]) == 0.0
    assert float(zero[5].rstrip(" |")) == 500.0
