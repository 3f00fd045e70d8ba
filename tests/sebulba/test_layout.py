"""The auto layout (sebulba/layout.py): actor threads and EnvPool threads from the cores."""
import pytest

from experiments import wiring
from sebulba import layout


@pytest.mark.parametrize("cpus, devices, threads, env_threads", [
    (2, 1, 1, 2),     # a laptop / CI: one thread (1 beats 2 on 2 cores), both cores step envs
    (16, 1, 2, 8),    # one GPU host: two threads, 8 EnvPool threads per pool
    (64, 1, 4, 16),   # capped at 4 threads per actor device
    (16, 2, 1, 8),    # two actor devices share the cores
])
def test_auto_fields_follow_the_cores(cpus, devices, threads, env_threads):
    chosen = layout.choose(0, 0, devices, cpus=cpus)
    assert (chosen.actor_threads, chosen.env_threads) == (threads, env_threads)
    assert chosen.auto == ("num_actor_threads", "env.num_threads")


def test_explicit_values_are_kept():
    chosen = layout.choose(3, 5, 1, cpus=64)
    assert (chosen.actor_threads, chosen.env_threads, chosen.auto) == (3, 5, ())
    # Only the auto field is chosen: env threads share the cores over the explicit threads.
    assert layout.choose(4, 0, 1, cpus=16).env_threads == 4


def test_resolve_layout_fills_the_config_in_place_and_says_what_it_chose():
    from experiments.configs import impala_atari
    config = impala_atari.get_config()
    assert config.num_actor_threads == 0 and config.env.num_threads == 0  # defaults: auto
    chosen = wiring.resolve_layout(config)
    cpus = layout.usable_cpus()
    assert config.num_actor_threads == chosen.actor_threads == max(1, min(4, cpus // 8))
    assert config.env.num_threads == chosen.env_threads >= 1
    assert wiring.read(config, devices=False).runtime.batch_envs == chosen.actor_threads * config.num_envs
    text = chosen.describe(1, config.num_envs, (0,), (0,))
    assert f"x {chosen.actor_threads} thread(s) x {config.num_envs} envs" in text
    assert "auto: num_actor_threads, env.num_threads" in text


def test_bad_values_are_left_for_validation_to_name():
    from experiments.configs import impala_classic
    config = impala_classic.get_config()
    config.num_actor_threads = -1
    assert wiring.resolve_layout(config) is None
    with pytest.raises(ValueError, match="num_actor_threads"):
        wiring.read(config, devices=False)
