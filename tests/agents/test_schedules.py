"""Learning-rate horizons: a fresh run's decay, and how a resumed run continues it.

Rule (agents/schedules.py, docs/checkpoints.md): resuming with the same horizon keeps the
schedule bit for bit; another horizon re-stretches the decay from the checkpoint's last rate
linearly to 0 at the new horizon; a constant rate ignores horizons.
"""
import numpy as np
import optax
import pytest

from agents import schedules
from agents.impala.config import ImpalaConfig
from agents.impala.learning import make_optimizer as impala_optimizer
from agents.ppo.config import PPOConfig
from agents.ppo.learning import make_optimizer as ppo_optimizer
from agents.schedules import Horizon, linear_decay, resumed_horizon

LR = 1e-3
from tests.helpers import IMPALA_640


def _rates(schedule, counts) -> np.ndarray:
    return np.array([np.float32(schedule(c)) for c in counts])


def test_plain_horizon_is_exactly_optax_linear_schedule():
    counts = range(0, 40)
    expected = _rates(optax.linear_schedule(LR, 0.0, 32), counts)
    np.testing.assert_array_equal(_rates(linear_decay(LR, 32), counts), expected)
    np.testing.assert_array_equal(_rates(linear_decay(LR, Horizon(32)), counts), expected)
    assert int(Horizon(32)) == 32 and Horizon(32) + 1 == 33  # builders may use it as an int


def test_resume_with_the_same_horizon_keeps_the_schedule_bit_for_bit():
    trained = Horizon(32)
    assert resumed_horizon(trained, 8, 32) is trained
    # A re-stretched horizon, resumed again with the same end, is kept as is too.
    stretched = resumed_horizon(trained, 8, 64)
    again = resumed_horizon(stretched, 20, 64)
    np.testing.assert_array_equal(_rates(linear_decay(LR, again), range(70)),
                                  _rates(linear_decay(LR, stretched), range(70)))


@pytest.mark.parametrize("resume_at, old_end, new_end", [(8, 32, 64), (32, 32, 64), (5, 32, 16)])
def test_another_horizon_restretches_from_the_checkpoints_rate_to_zero(resume_at, old_end,
                                                                         new_end):
    old = linear_decay(LR, Horizon(old_end))
    new = linear_decay(LR, resumed_horizon(Horizon(old_end), resume_at, new_end))
    last = resume_at - 1  # the checkpoint's last update ran at counter resume_at - 1
    np.testing.assert_allclose(float(new(last)), float(old(last)), rtol=1e-6)
    rates = _rates(new, range(last, new_end + 3))
    step = float(old(last)) / (new_end - last)  # the new slope: no jump, a straight line to 0
    np.testing.assert_allclose(np.diff(rates[:new_end - last + 1]), -step, rtol=1e-4,
                               atol=1e-12)
    assert rates[new_end - last] == 0.0 and np.all(rates[new_end - last:] == 0.0)
    assert np.all(rates[:new_end - last] > 0.0)  # every update of the new horizon learns
    # The old code started over from the full-horizon value: a jump (e.g. 3.1e-5 -> 5e-4).
    assert float(new(resume_at)) <= float(old(last))


def test_trained_horizon_from_metadata():
    saved = Horizon(64, 7, 0.78125)
    assert schedules.trained_horizon({"lr_horizon": saved.to_dict()}).to_dict() == \
        saved.to_dict()
    # Checkpoints from before `lr_horizon`: the plain decay over the saved total_env_steps.
    legacy = {"updates": 8, "env_steps": 2048, "config": {"total_env_steps": 4000}}
    assert schedules.trained_horizon(legacy).to_dict() == Horizon(15).to_dict()


def test_bad_horizon_is_refused():
    with pytest.raises(ValueError, match="begin_update=9"):
        Horizon(8, 9, 0.5)


@pytest.mark.parametrize("make", [
    lambda d: impala_optimizer(ImpalaConfig(lr_decay=d, **IMPALA_640), Horizon(64, 7, 0.5))[1],
    lambda d: ppo_optimizer(PPOConfig(lr_decay=d), Horizon(64, 7, 0.5))[1]])
def test_agents_use_the_horizon_and_constant_rates_ignore_it(make):
    decay, constant = make(True), make(False)
    assert float(decay(7)) == pytest.approx(0.5 * float(constant(7)), rel=1e-6)
    assert float(decay(64)) == 0.0
    assert len({float(constant(c)) for c in (0, 7, 30, 64, 100)}) == 1
