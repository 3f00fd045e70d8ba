"""The layout (sebulba/layout.py): actor threads and EnvPool threads from the cores, carrying
the config's batch (`num_envs` per process) whatever they are."""
import dataclasses

import pytest

from experiments import wiring
from podracer.validation import ConfigError
from sebulba import layout
from sebulba.runtime_config import RuntimeConfig


@pytest.mark.parametrize("cpus, devices, threads, env_threads", [
    (2, 1, 1, 2),     # a laptop / CI: one thread (1 beats 2 on 2 cores), both cores step envs
    (16, 1, 2, 8),    # one GPU host: two threads, 8 EnvPool threads per pool
    (64, 1, 4, 16),   # capped at 4 threads per actor device
    (16, 2, 1, 8),    # two actor devices share the cores
])
def test_auto_fields_follow_the_cores(cpus, devices, threads, env_threads):
    rc = RuntimeConfig(actor_device_ids=tuple(range(devices)), num_envs=64)
    chosen = layout.resolve(rc, 0, cpus=cpus)
    assert (chosen.actor_threads, chosen.env_threads) == (threads, env_threads)
    assert chosen.auto == ("num_actor_threads", "env.num_threads")
    assert chosen.runtime.num_envs == 64  # the batch: the threads share it
    assert chosen.runtime.envs_per_thread == 64 // (devices * threads)


def test_auto_threads_split_the_envs_into_whole_shares():
    # 4 threads by the cores, but 4 threads would get 3 envs each, which 2 learner devices
    # cannot split; 3 threads get 4 each (2 per learner).
    rc = RuntimeConfig(num_envs=12, learner_device_ids=(0, 1))
    chosen = layout.resolve(rc, 1, cpus=64)
    assert chosen.actor_threads == 3 and chosen.runtime.envs_per_thread == 4
    assert "4 by the cores, 3 to split num_envs=12" in chosen.describe()


def test_explicit_values_are_kept():
    rc = RuntimeConfig(num_actor_threads=3, num_envs=12)
    chosen = layout.resolve(rc, 5, cpus=64)
    assert (chosen.actor_threads, chosen.env_threads, chosen.auto) == (3, 5, ())
    # Only the auto field is chosen: env threads share the cores over the explicit threads.
    assert layout.resolve(dataclasses.replace(rc, num_actor_threads=4), 0,
                          cpus=16).env_threads == 4


def test_an_explicit_split_that_does_not_divide_is_refused_naming_the_numbers():
    with pytest.raises(ValueError, match=r"num_actor_threads=3: num_envs=16 \(per process\) "
                                         r"does not split into 3 actor thread\(s\)"):
        RuntimeConfig(num_actor_threads=3, num_envs=16)
    with pytest.raises(ValueError, match=r"num_envs=6 \(per process\) must be divisible by "
                                         r"actor devices x learner devices \(1 x 4\)"):
        RuntimeConfig(num_envs=6, learner_device_ids=(0, 1, 2, 3))


def test_read_resolves_the_layout_once_records_it_and_says_what_it_chose(tmp_path):
    from experiments.configs import impala_atari
    config = impala_atari.get_config()
    config.run_dir = str(tmp_path / "run")
    assert config.num_actor_threads == 0 and config.env.num_threads == 0  # defaults: auto
    sections = wiring.read(config, devices=False)
    chosen = sections.layout
    cpus = layout.usable_cpus()
    recorded = sections.config  # what config.json and checkpoints hold
    assert recorded.num_actor_threads == chosen.actor_threads == max(1, min(4, cpus // 8))
    assert recorded.env.num_threads == chosen.env_threads == sections.env.num_threads >= 1
    assert config.num_actor_threads == 0 and config.env.num_threads == 0  # left as given
    assert sections.shape.batch_envs == config.num_envs == 128  # whatever the threads
    text = chosen.describe()
    assert (f"128 envs per process = actor devices [0] x {chosen.actor_threads} thread(s) x "
            f"{128 // chosen.actor_threads} envs") in text
    assert "auto: num_actor_threads, env.num_threads" in text


def test_bad_values_are_named_when_the_config_is_read():
    from experiments.configs import impala_classic
    config = impala_classic.get_config()
    config.num_actor_threads = -1
    with pytest.raises(ConfigError, match="num_actor_threads=-1 must be a non-negative"):
        wiring.read(config, devices=False)
