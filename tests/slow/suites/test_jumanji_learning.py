"""jumanji: PPO learns a small Snake (a learning run)."""
import pytest

pytest.importorskip("jumanji", reason="the jumanji extra is not installed: "
                                      "pip install -r requirements-jumanji.txt")

from anakin import envs  # noqa: E402
from tests.anakin.suites.common import ppo_best_return, random_return  # noqa: E402


def test_ppo_beats_random_on_small_snake(tmp_path):
    """PPO (ppo_gymnax's config as it is) on Snake-v1 on a 6x6 board with a 100-step limit
    (reward 1 per fruit; the observation includes the raw step count; its action mask masks
    the policy, and a trapped snake's empty mask is allowed: env.action_mask_empty). A
    uniformly random policy eats 0.15 fruits per episode (`random_return`), dying within ~7
    steps; PPO must reach a 100-game mean of 4 fruits within 300k steps. Measured here (2-core
    CPU loaded by other runs): 4.02 after 125k steps, 55 s wall (76 s for the test); run on,
    7.8 after 300k steps."""
    name, options = "jumanji:Snake-v1", {"num_rows": 6, "num_cols": 6, "time_limit": 100}
    baseline = random_return(envs.make_env(name, options))
    assert baseline < 0.5
    best = ppo_best_return(tmp_path, name, total_env_steps=300_000, stop_at_return=4.0,
                           **{"env.action_mask_empty": "allow"},
                           **{f"env.options.{k}": v for k, v in options.items()})
    print(f"random policy: {baseline:.2f}")
    assert best >= 4.0
