"""brax: a few updates with physics on both runtimes, and PPO learns inverted_pendulum."""
import pytest

pytest.importorskip("brax", reason="the brax extra is not installed: "
                                   "pip install -r requirements-brax.txt")

from anakin import envs  # noqa: E402
from tests.anakin.suites.common import (  # noqa: E402
    few_updates, ppo_best_return, random_return)


PENDULUM = "brax:inverted_pendulum"


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_few_updates_with_physics(tmp_path, runtime):
    few_updates(tmp_path, PENDULUM, runtime)


def test_ppo_beats_random_on_inverted_pendulum(tmp_path):
    """PPO (ppo_gymnax's config as it is: 64 envs x 32 steps, lr 1e-3, separate 64x64 MLPs,
    a clipped Gaussian) on brax inverted_pendulum (generalized backend, 1000-step limit; reward 1
    per step until the pole passes 0.2 rad). A uniformly random policy's episodes return 5.7
    (`random_return`); PPO must reach a 100-episode mean of 500 within 400k steps. Measured here
    (2-core CPU loaded by other runs): 507.7 after 153,600 steps, 92 s wall in train.run (60 s
    of it compiling), 2.5 min for the whole test."""
    baseline = random_return(envs.make_env(PENDULUM))
    assert baseline < 20
    best = ppo_best_return(tmp_path, PENDULUM, total_env_steps=400_000, stop_at_return=500.0)
    print(f"random policy: {baseline:.1f}")
    assert best >= 500.0
