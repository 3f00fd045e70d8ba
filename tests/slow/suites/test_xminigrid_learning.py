"""xminigrid: PPO learns MiniGrid-Empty-5x5 (a learning run)."""
import pytest

pytest.importorskip("xminigrid", reason="the xminigrid extra is not installed: "
                                        "pip install -r requirements-xminigrid.txt")

from anakin import envs  # noqa: E402
from tests.anakin.suites.common import ppo_best_return, random_return  # noqa: E402


EMPTY = "MiniGrid-Empty-5x5"


def test_ppo_beats_random_on_empty_5x5(tmp_path):
    """PPO (ppo_gymnax's config as it is) on MiniGrid-Empty-5x5 (the suite's 100-step limit):
    reaching the goal pays 1 - 0.9 * steps / 100 (0.955 on the shortest path, 5 steps). A
    uniformly random policy's mean return is ~0.26 (`random_return`); PPO must reach a
    100-game mean of 0.9 within 100k steps. Measured here (2-core CPU loaded by other runs):
    0.909 after 18,432 steps, 53-81 s wall in train.run (most of it compiling: the suite's
    step compiles slowly on CPU), 75-100 s for the whole test."""
    name = f"xminigrid:{EMPTY}"
    baseline = random_return(envs.make_env(name))
    assert baseline < 0.5
    best = ppo_best_return(tmp_path, name, total_env_steps=100_000, stop_at_return=0.9)
    print(f"random policy: {baseline:.3f}")
    assert best >= 0.9
