"""scripts/sb3_highway.py, the parts that run without torch, SB3 or the Python highway-env:
the game loop on EnvPool's HighwayFast-v0 against single envs played one by one, the policies
a learned one must beat, the tables from CSV rows, and the docs' tables from the committed CSV.
This library's exported ONNX policy in the game loop: tests/slow/scripts/test_sb3_side.py."""
import json
import os

import envpool
import numpy as np
import pytest

from scripts import sb3_highway


def _scripted(actions: np.ndarray):
    """act(obs) playing row t of `actions` [T, envs] at step t."""
    step = iter(range(len(actions)))
    return lambda obs: actions[next(step)]


def test_first_games_are_each_envs_first_game_played_alone():
    n, seed = 6, 7
    actions = np.random.default_rng(0).integers(0, 5, (60, n))
    actions[:, n // 2:] = 4  # always SLOWER: games that last, beside random ones that crash
    games = sb3_highway.first_games(sb3_highway.make_envs("envpool", n, seed),
                                    _scripted(actions), n)
    for i in range(n):
        env = envpool.make_gymnasium(sb3_highway.ENVPOOL_ID, num_envs=1, seed=seed + i)
        env.reset()
        ret, speeds, t = 0.0, [], 0
        while True:
            _, reward, terminated, truncated, info = env.step(actions[t, i:i + 1])
            ret, t = ret + float(reward[0]), t + 1
            speeds.append(float(info["speed"][0]))
            if terminated[0] or truncated[0]:
                break
        env.close()
        assert games["length"][i] == t
        assert games["return"][i] == pytest.approx(ret, rel=1e-6)
        assert games["crashed"][i] == bool(info["crashed"][0])
        assert games["speed"][i] == pytest.approx(np.mean(speeds), rel=1e-6)
    # HighwayFast-v0 ends a game early only by a crash (30 decisions otherwise).
    assert np.all(games["crashed"] == (games["length"] < 30))
    assert games["crashed"].any() and not games["crashed"].all()


def test_the_baselines_and_the_simulators():
    slower = sb3_highway._baseline(sb3_highway.BASELINES["always SLOWER"], 4, 0)
    np.testing.assert_array_equal(slower(None), [4, 4, 4, 4])
    random = sb3_highway._baseline(None, 1000, 0)(None)
    assert set(np.unique(random)) == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="'carla'.*allowed"):
        sb3_highway.make_envs("carla", 1, 0)


def _row(library, seed, simulator, ret, crash, wall=""):
    return {"library": library, "seed": seed, "steps": 20736 if wall else 0, "wall_s": wall,
            "load": 1.0 if wall else "", "simulator": simulator, "episodes": 100,
            "return": ret, "crash_rate": crash, "speed": 21.0, "length": 25.0, "commit": "x"}


def test_table_means_over_seeds_and_the_wall_time_ratio():
    rows = []
    for library, seed, wall, (py, pool) in (
            ("sb3", 0, 400.0, ((20.0, 0.3), (19.0, 0.4))),
            ("sb3", 1, 500.0, ((22.0, 0.1), (21.0, 0.2))),
            ("ours", 0, 20.0, ((18.0, 0.5), (19.0, 0.4))),
            ("ours", 1, 25.0, ((18.0, 0.5), (19.0, 0.4)))):
        rows += [_row(library, seed, "python", *py, wall),
                 _row(library, seed, "envpool", *pool, wall)]
    rows += [_row("always SLOWER", "", "python", 20.5, 0.02),
             _row("always SLOWER", "", "envpool", 20.7, 0.03)]
    text = sb3_highway.table(rows)
    assert ("| Stable-Baselines3 PPO, trained on Python highway-env | Python highway-env | 2 | "
            "21.00 (20.00 to 22.00) | 0.20 (0.10 to 0.30) |") in text
    assert "| always SLOWER | EnvPool | - | 20.70 | 0.03 | 21.0 | 25.0 |" in text
    assert ("| this library's PPO, trained on EnvPool | 20,736 | 2 | 22.5 (20.0 to 25.0) | "
            "933 (829 to 1037) |") in text  # 20,736 / 20 and / 25 steps per second
    # (400 + 500) / 2 / ((20 + 25) / 2) = 20; per seed 400 / 20 and 500 / 25.
    assert "ratio, SB3 / this library: 20.0x (means over seeds; per seed 20.0x to 20.0x)" in text


def test_the_docs_tables_are_the_committed_csv():
    rows = sb3_highway.read(sb3_highway.CSV)
    text = sb3_highway.table(rows)
    with open(os.path.join(sb3_highway.ROOT, "docs", "driving.md")) as f:
        doc = f.read()
    missing = [line for line in text.splitlines() if line and line not in doc]
    assert not missing, f"docs/driving.md lacks these lines of the recomputed table: {missing}"
    for library in sb3_highway.LIBRARIES:  # the 3 seeds or more per library
        assert len({r["seed"] for r in rows if r["library"] == library}) >= 3, library
        assert {r["simulator"] for r in rows if r["library"] == library} == set(
            sb3_highway.SIMULATORS)


def test_merge_orders_the_parts_as_the_tables(tmp_path):
    rows = [_row("always SLOWER", "", "envpool", 20.7, 0.03),
            _row("ours", 1, "envpool", 19.0, 0.4, 25.0),
            _row("ours", 1, "python", 18.0, 0.5, 25.0),
            _row("sb3", 0, "python", 20.0, 0.3, 400.0)]
    sb3_highway.write(rows[:2], str(tmp_path / "a.csv"))
    sb3_highway.write(rows[2:], str(tmp_path / "b.csv"))
    merged = sb3_highway.merge([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
                               str(tmp_path / "all.csv"))
    assert [(r["library"], r["simulator"]) for r in merged] == [
        ("sb3", "python"), ("ours", "python"), ("ours", "envpool"), ("always SLOWER", "envpool")]
    assert sb3_highway.read(str(tmp_path / "all.csv")) == merged


@pytest.mark.parametrize("argv,message", [
    (["evaluate", "runs/x", "--commit", "c", "--part", "2/2"], "--part='2/2'"),
    (["evaluate", "runs/x", "--commit", "c", "--episodes", "0"], "--episodes=0"),
    (["run", "--steps", "0"], "--steps=0")])
def test_bad_arguments_are_refused_naming_them(argv, message, capsys):
    with pytest.raises(SystemExit):
        sb3_highway.main(argv)
    assert message in capsys.readouterr().err


def test_run_keeps_the_seeds_it_finished(tmp_path, monkeypatch):
    """`run` with the two trainings faked: each seed's pair lands in walls.json as soon as it
    is done, with the steps each side reports, so a run stopped at seed 1 keeps seed 0."""
    def fake_timed(cmd):
        out = cmd[cmd.index("--out") + 1] if "--out" in cmd else None
        if out is not None:  # SB3's side
            if out.endswith("s1"):
                raise KeyboardInterrupt
            os.makedirs(out)
            with open(os.path.join(out, "sb3.json"), "w") as f:
                f.write('{"steps": 20736}')
        else:
            run_dir = next(a for a in cmd if a.startswith("--config.run_dir="))
            assert "--config.total_env_steps=20736" in cmd  # the step SB3 ended at
            os.makedirs(run_dir.split("=", 1)[1])
            with open(os.path.join(run_dir.split("=", 1)[1], "summary.json"), "w") as f:
                f.write('{"env_steps": 20736}')
        return 5.0, 1.0
    monkeypatch.setattr(sb3_highway, "_timed", fake_timed)
    monkeypatch.setattr(sb3_highway.subprocess, "run", lambda *a, **k: None)
    with pytest.raises(KeyboardInterrupt):
        sb3_highway.run([0, 1], 20000, str(tmp_path), "python")
    with open(tmp_path / "walls.json") as f:
        walls = json.load(f)
    assert [(w["library"], w["seed"], w["steps"]) for w in walls] == [
        ("sb3", 0, 20736), ("ours", 0, 20736)]


def test_two_budgets_make_two_tables_and_merge_keeps_a_shared_baseline_once(tmp_path):
    small = [_row("sb3", 0, "python", 20.0, 0.3, 400.0),
             _row("ours", 0, "python", 18.0, 0.5, 20.0)]
    large = [dict(r, steps=200448, wall_s=10 * float(r["wall_s"])) for r in small]
    slower = _row("always SLOWER", "", "python", 21.1, 0.01)
    sb3_highway.write(small + [slower], str(tmp_path / "committed.csv"))
    sb3_highway.write(large + [slower], str(tmp_path / "part.csv"))
    rows = sb3_highway.merge([str(tmp_path / "committed.csv"), str(tmp_path / "part.csv")],
                             str(tmp_path / "all.csv"))
    assert [(r["library"], int(r["steps"])) for r in rows] == [
        ("sb3", 20736), ("sb3", 200448), ("ours", 20736), ("ours", 200448),
        ("always SLOWER", 0)]
    text = sb3_highway.table(rows)
    assert text.index("At 20,736 env steps:") < text.index("At 200,448 env steps:")
    assert text.count("| always SLOWER | Python highway-env | - | 21.10 |") == 2
    assert "| this library's PPO, trained on EnvPool | 200,448 | 1 | 200.0 |" in text
    # One budget: no line naming it (docs/driving.md's tables as they are).
    assert "env steps:" not in sb3_highway.table(small + [slower])
