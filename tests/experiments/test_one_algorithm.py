"""A config is one algorithm on every host (issue 29): read on a machine of 2, 8, 10, 16, 32 or
64 cores, with 1 or 2 actor devices, every shipped config gives the same samples per update,
the same minibatches (their size) and the same optimiser constants; only the layout that
carries the batch (actor threads, EnvPool threads) follows the machine.

The core count is faked where the layout reads it (`os.sched_getaffinity`, `os.cpu_count`), as
a process restricted by a container or SLURM sees it. Before, `num_envs` was per actor thread:
the IMPALA Atari default ran 32 / 32 / 64 / 128 / 128 envs per update at 2 / 10 / 16 / 32 / 64
cores, with the clip and epsilon of a 640-sample minibatch whatever it trained on."""
import os

import pytest

from experiments import wiring
from podracer.validation import ConfigError
from experiments.configs import (impala_atari, impala_classic, ppo_atari, ppo_classic,
                                 ppo_mujoco)

CORES = (2, 8, 10, 16, 32, 64)
CONFIGS = [  # (module, variant, actor device counts its num_envs splits over)
    (impala_atari, "default", (1, 2)), (impala_atari, "cpu", (1, 2)),
    (ppo_atari, "default", (1, 2)), (ppo_atari, "sync", (1, 2)), (ppo_atari, "cpu", (1, 2)),
    (ppo_atari, "cleanrl", (1, 2)), (impala_classic, "default", (1, 2)),
    (ppo_classic, "default", (1, 2)), (ppo_mujoco, "default", (1,)),  # 1 env: 1 device
    (ppo_mujoco, "async", (1,)), (ppo_mujoco, "pendulum", (1, 2)),
]


def _fake_cores(monkeypatch, n: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
    monkeypatch.setattr(os, "cpu_count", lambda: n)


def _algorithm(sections):
    """What must not depend on the machine: the batch, how the agent splits it (minibatch
    size, gradient steps) and the constants derived from it, and the agent's config."""
    shape, spec = sections.shape, sections.spec
    return (shape.samples, shape.batch_envs, shape.unroll_length, shape.on_policy,
            spec.describe(sections.agent, shape), sections.agent)


@pytest.mark.parametrize("module,variant,devices", CONFIGS,
                         ids=[f"{m.__name__.rsplit('.', 1)[-1]}:{v}" for m, v, _ in CONFIGS])
def test_the_same_config_is_the_same_algorithm_on_any_host(tmp_path, monkeypatch, module,
                                                           variant, devices):
    seen, layouts = {}, set()
    for n_devices in devices:
        for cores in CORES:
            _fake_cores(monkeypatch, cores)
            config = module.get_config(variant)
            config.run_dir = str(tmp_path / "run")
            config.actor_device_ids = tuple(range(n_devices))
            sections = wiring.read(config, devices=False)
            seen[(n_devices, cores)] = _algorithm(sections)
            layouts.add((n_devices, sections.runtime.num_actor_threads,
                         sections.env.num_threads))
    first = next(iter(seen.values()))
    different = {k: v for k, v in seen.items() if v != first}
    assert not different, (first, different)
    if module.get_config(variant).num_actor_threads == 0:  # auto: the machine did change
        assert len(layouts) > len(devices), layouts


def test_the_impala_atari_default_is_cleanbas_batch_everywhere(tmp_path, monkeypatch):
    """cleanba's IMPALA: 128 envs x 20 steps = 2560 samples per update, 4 gradient steps of
    640 samples, clip 40/640 and RMSProp epsilon (0.01/640)^2 for our per-sample mean."""
    for cores in (2, 10, 64):
        _fake_cores(monkeypatch, cores)
        config = impala_atari.get_config()
        config.run_dir = str(tmp_path / "run")
        s = wiring.read(config, devices=False)
        assert (s.shape.samples, s.agent.num_minibatches) == (2560, 4)
        line = s.spec.describe(s.agent, s.shape)
        assert "4 gradient step(s) per update of n = 640 samples" in line
        assert "max_grad_norm 0.0625, rmsprop_eps 2.44141e-10" in line


def test_a_split_that_does_not_divide_is_refused_naming_it(tmp_path):
    config = impala_atari.get_config("cpu")  # 16 envs
    config.run_dir = str(tmp_path / "run")
    config.num_actor_threads = 3
    with pytest.raises(ConfigError,
                       match=r"num_actor_threads=3: num_envs=16 \(per process\) does not split "
                             r"into 3 actor thread"):
        wiring.read(config, devices=False)
