"""navix: PPO learns Navix-Empty-5x5 (a learning run)."""
import pytest

pytest.importorskip("navix", reason="the navix extra is not installed: "
                                    "pip install -r requirements-navix.txt")

from anakin import envs  # noqa: E402
from tests.anakin.suites.common import ppo_best_return, random_return  # noqa: E402


EMPTY = "Navix-Empty-5x5-v0"


def test_ppo_beats_random_on_empty_5x5(tmp_path):
    """PPO (ppo_gymnax's config as it is) on Navix-Empty-5x5-v0 (navix's default 100-step
    limit): navix pays 1 for reaching the goal (no time discount), so the return is the success
    rate. A uniformly random policy reaches the goal in 42% of its episodes (`random_return`:
    0.422); PPO must reach a 100-game mean of 0.95 within 100k steps. Measured here (2-core
    CPU loaded by other runs): 0.98 after 20,480 steps, 37-44 s wall in train.run, 45-50 s
    for the whole test."""
    name = f"navix:{EMPTY}"
    baseline = random_return(envs.make_env(name))
    assert baseline < 0.6
    best = ppo_best_return(tmp_path, name, total_env_steps=100_000, stop_at_return=0.95)
    print(f"random policy: {baseline:.3f}")
    assert best >= 0.95
