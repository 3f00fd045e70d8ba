"""A config is one algorithm on every host (issue 29): read on a machine of 2, 8, 10, 16, 32 or
64 cores, with 1 or 2 actor devices, every shipped config gives the same samples per update,
the same minibatches (their size) and the same optimiser constants; only the layout that
carries the batch (actor threads, EnvPool threads) follows the machine.

Every shipped config is every variant of every module in experiments/configs/ (the test below
checks that CONFIGS lists them all), on its own runtime; the Anakin configs (ppo_gymnax,
ppo_minatar) also under `runtime=sebulba`, which steps the same env from the host through the
Sebulba layout. Anakin reads no actor devices (its devices are learner_device_ids), so its
configs run with 1 actor device only (the core count is faked all the same); so do the configs
of 1 env (ppo_mujoco's default, async and debug: 1 env does not split over 2 devices).

The core count is faked where the layout reads it (`os.sched_getaffinity`, `os.cpu_count`), as
a process restricted by a container or SLURM sees it. Before, `num_envs` was per actor thread:
the IMPALA Atari default ran 32 / 32 / 64 / 128 / 128 envs per update at 2 / 10 / 16 / 32 / 64
cores, with the clip and epsilon of a 640-sample minibatch whatever it trained on."""
import importlib
import os
import pkgutil

import pytest

from experiments import configs, wiring
from podracer.validation import ConfigError
from experiments.configs import (impala_atari, impala_classic, ppo_atari, ppo_classic,
                                 ppo_gymnax, ppo_highway, ppo_minatar, ppo_mujoco)

CORES = (2, 8, 10, 16, 32, 64)
BOTH, ONE = (1, 2), (1,)
CONFIGS = [  # (module, variant, runtime: None = the config's own, actor device counts)
    (impala_atari, "default", None, BOTH), (impala_atari, "cpu", None, BOTH),
    (impala_atari, "debug", None, BOTH),
    (impala_classic, "default", None, BOTH), (impala_classic, "debug", None, BOTH),
    (ppo_atari, "default", None, BOTH), (ppo_atari, "sync", None, BOTH),
    (ppo_atari, "cpu", None, BOTH), (ppo_atari, "cleanrl", None, BOTH),
    (ppo_atari, "debug", None, BOTH),
    (ppo_classic, "default", None, BOTH), (ppo_classic, "sync", None, BOTH),
    (ppo_classic, "debug", None, BOTH),
    (ppo_mujoco, "default", None, ONE), (ppo_mujoco, "async", None, ONE),  # 1 env: 1 device
    (ppo_mujoco, "pendulum", None, BOTH), (ppo_mujoco, "debug", None, ONE),
    (ppo_highway, "fast", None, BOTH), (ppo_highway, "racetrack", None, BOTH),
    (ppo_highway, "parking", None, BOTH), (ppo_highway, "debug", None, BOTH),
    # Anakin (the configs' own runtime): no actor devices, no actor threads.
    (ppo_gymnax, "default", None, ONE), (ppo_gymnax, "debug", None, ONE),
    (ppo_minatar, "default", None, ONE), (ppo_minatar, "purejaxrl", None, ONE),
    (ppo_minatar, "debug", None, ONE),
    # The same configs on the Sebulba runtime (`--config.runtime=sebulba`).
    (ppo_gymnax, "default", "sebulba", BOTH), (ppo_gymnax, "debug", "sebulba", BOTH),
    (ppo_minatar, "default", "sebulba", BOTH), (ppo_minatar, "purejaxrl", "sebulba", BOTH),
    (ppo_minatar, "debug", "sebulba", BOTH),
]


def _name(module) -> str:
    return module.__name__.rsplit(".", 1)[-1]


def _fake_cores(monkeypatch, n: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
    monkeypatch.setattr(os, "cpu_count", lambda: n)


def _algorithm(sections):
    """What must not depend on the machine: the batch, how the agent splits it (minibatch
    size, gradient steps) and the constants derived from it, and the agent's config."""
    shape, spec = sections.shape, sections.spec
    return (shape.samples, shape.batch_envs, shape.unroll_length, shape.on_policy,
            spec.describe(sections.agent, shape), sections.agent)


def _config(module, variant, runtime, tmp_path):
    config = module.get_config(variant)
    config.run_dir = str(tmp_path / "run")
    if runtime is not None:
        config.runtime = runtime
    return config


@pytest.mark.parametrize(
    "module,variant,runtime,devices", CONFIGS,
    ids=[f"{_name(m)}:{v}" + (f"@{r}" if r else "") for m, v, r, _ in CONFIGS])
def test_the_same_config_is_the_same_algorithm_on_any_host(tmp_path, monkeypatch, module,
                                                           variant, runtime, devices):
    seen, layouts = {}, set()
    for n_devices in devices:
        for cores in CORES:
            _fake_cores(monkeypatch, cores)
            config = _config(module, variant, runtime, tmp_path)
            config.actor_device_ids = tuple(range(n_devices))
            sections = wiring.read(config, devices=False)
            seen[(n_devices, cores)] = _algorithm(sections)
            layouts.add((n_devices, getattr(sections.runtime, "num_actor_threads", None),
                         getattr(sections.env, "num_threads", None)))
    first = next(iter(seen.values()))
    different = {k: v for k, v in seen.items() if v != first}
    assert not different, (first, different)
    if _config(module, variant, runtime, tmp_path).num_actor_threads == 0:
        assert len(layouts) > len(devices), layouts  # auto: the machine did change


def test_every_shipped_variant_is_listed():
    """CONFIGS holds every variant of every config module in experiments/configs/, and each
    Anakin one under Sebulba too: a new config or variant cannot skip the test above."""
    shipped, anakin = set(), set()
    for info in pkgutil.iter_modules(configs.__path__):
        module = importlib.import_module(f"{configs.__name__}.{info.name}")
        if not hasattr(module, "get_config"):
            continue  # common.py: shared sections, no config
        assert module.VARIANTS, info.name
        for variant in module.VARIANTS:
            shipped.add((info.name, variant, None))
            if module.get_config(variant).get("runtime", "sebulba") == "anakin":
                anakin.add((info.name, variant, "sebulba"))
    assert anakin, "no Anakin config found"
    listed = [(_name(m), v, r) for m, v, r, _ in CONFIGS]
    assert len(listed) == len(set(listed))
    assert set(listed) == shipped | anakin


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
