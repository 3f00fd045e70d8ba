"""scripts/random_scores.py: a uniformly random policy's first-episode returns (the 0 of a
normalised score), on gymnax CartPole, where every step pays 1 (so return == length) and a
random policy's mean episode is known to be ~22 steps."""
import numpy as np
import pytest

from scripts import random_scores


def test_cartpole_first_episodes(tmp_path, capsys):
    result = random_scores.first_episodes("CartPole-v1", episodes=400, seed=1)
    assert result["return"].shape == (400,)  # one first episode per env, no more
    np.testing.assert_array_equal(result["return"], result["length"])
    assert result["length"].min() >= 8  # the pole cannot fall in fewer steps
    s = random_scores.summary(result)
    assert 19.0 < s["mean"] < 26.0 and 0.2 < s["stderr"] < 1.5

    out = random_scores.main(["CartPole-v1", "--episodes", "50", "--json",
                              str(tmp_path / "r.json")])
    assert out["CartPole-v1"]["episodes"] == 50
    assert "| CartPole-v1 | 50 |" in capsys.readouterr().out
    assert (tmp_path / "r.json").read_text().startswith("{")


def test_errors_name_the_bad_value(capsys):
    with pytest.raises(SystemExit):
        random_scores.main(["CartPole-v1", "--episodes", "20", "--max_steps", "3"])
    assert "--max_steps=3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        random_scores.main(["gymnax:NoSuchEnv", "--episodes", "20"])
    assert "NoSuchEnv" in capsys.readouterr().err
