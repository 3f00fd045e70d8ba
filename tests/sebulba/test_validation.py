"""Config validation: every bad config fails up front, naming the field, the value and the rule,
before any env is built, thread started or function compiled."""
import os
import time

import pytest

from experiments import impala_atari, ppo_atari, wiring
from experiments.configs import impala_classic, ppo_classic
from sebulba import envs
from podracer.validation import ConfigError


def _set(config, key, value):
    """Sets a (nested) field, bypassing ConfigDict's type safety like a programmatic config."""
    *path, leaf = key.split(".")
    target = config
    for p in path:
        target = target[p]
    with target.ignore_type(), target.unlocked():
        target[leaf] = value


def _config(algo, tmp_path, overrides):
    config = (impala_classic if algo == "impala" else ppo_classic).get_config()
    config.run_dir = str(tmp_path / "run")
    for key, value in overrides.items():
        if isinstance(value, str) and "<tmp>" in value:
            value = value.replace("<tmp>", str(tmp_path))
        _set(config, key, value)
    return config


def _validate(algo, config, devices=True):
    return wiring.read(config, agent=algo, devices=devices).runtime


BAD = [  # (experiment, overrides, message regex)
    ("impala", {"num_envs": 0}, r"num_envs=0 must be a positive integer"),
    ("impala", {"unroll_length": 2.5}, r"unroll_length=2\.5 has type float; expected int"),
    ("impala", {"queue_size": -1}, r"queue_size=-1 must be a positive integer"),
    ("impala", {"synchronous": "yes"}, r"synchronous='yes' has type str; expected bool"),
    ("impala", {"seed": -5}, r"seed=-5 must be in \[0, 2\*\*30\)"),
    ("impala", {"stall_warning_s": 0.0}, r"stall_warning_s=0\.0 must be > 0"),
    ("impala", {"max_nonfinite_updates": 0}, r"max_nonfinite_updates=0 must be a positive"),
    ("impala", {"max_env_restarts": -1}, r"max_env_restarts=-1 must be a non-negative int"),
    ("impala", {"total_env_steps": 10**15}, r"total_env_steps=10{15} is too large.*2\*\*31"),
    ("impala", {"stop_at_return": float("nan")}, r"stop_at_return=nan must be a finite"),
    ("impala", {"num_envs": 6, "learner_device_ids": (0, 1, 2, 3)},
     r"num_envs=6 \(per process\) must be divisible by actor devices x learner devices "
     r"\(1 x 4\)"),
    ("impala", {"num_envs": 16, "num_actor_threads": 3},
     r"num_actor_threads=3: num_envs=16 \(per process\) does not split into 3 actor thread"),
    ("impala", {"learner_device_ids": ()}, r"learner_device_ids=\[\] must list at least one"),
    ("impala", {"actor_device_ids": (0, 0)}, r"actor_device_ids=\[0, 0\] must list .* once"),
    ("impala", {"actor_device_ids": (9,)}, r"actor_device_ids contains 9.*allowed ids are 0\.\.3"),
    ("impala", {"console_every_s": -1.0}, r"console_every_s=-1\.0 must be a non-negative"),
    ("impala", {"checkpoint_keep": -1}, r"checkpoint_keep=-1 must be a non-negative integer"),
    ("impala", {"eval_every_updates": -2}, r"eval_every_updates=-2 must be a non-negative"),
    ("impala", {"eval_episodes": 0}, r"eval_episodes=0 must be an integer >= 1"),
    ("ppo", {"eval_policy": "best"}, r"eval_policy='best' is not an evaluation policy"),
    ("impala", {"env.name": "CartPol-v1"}, r"env\.name='CartPol-v1'.*Close matches: CartPole-v1"),
    ("impala", {"env.noop_max": 0}, r"env\.noop_max=0; must be >= 1"),
    ("impala", {"env.frame_skip": "4"}, r"env\.frame_skip='4' has type str; expected int"),
    ("impala", {"env.workers": 2}, r"env\.name='CartPole-v1': env\.workers=2 steps Python "
                                   r"envs .* 'CartPole-v1' is an EnvPool id"),
    ("impala", {"env.workers": 2, "env.name": "gymnax:CartPole-v1"},
     r"env\.workers=2: 'gymnax:CartPole-v1' is a JAX env"),
    ("impala", {"env.workers": -1}, r"env\.workers=-1 must be >= 0"),
    ("impala", {"env.nme": "x"}, r"env\.nme is not a field of EnvConfig; allowed: name, "),
    ("impala", {"network.torso": "transformer"},
     r"network\.torso='transformer': unknown torso 'transformer'.*Registered torsos: .*mlp"),
    ("impala", {"network.mlp_hidden_sizes": (64, 0)},
     r"network\.mlp_hidden_sizes=\(64, 0\) must be a non-empty tuple of positive integers"),
    ("impala", {"agent.discount": 1.5}, r"agent\.discount=1\.5 must be in \[0, 1\]"),
    ("impala", {"agent.optimizer": "sgd"}, r"agent\.optimizer='sgd'; allowed: 'rmsprop'"),
    ("impala", {"agent.learning_rate": -1.0}, r"agent\.learning_rate=-1\.0 must be positive"),
    ("impala", {"agent.learning_rate": "3e-4"}, r"agent\.learning_rate='3e-4' has type str"),
    ("ppo", {"agent.num_minibatches": 3},
     r"agent\.num_minibatches=3 must divide the 16 environments"),
    ("ppo", {"agent.loop": "while"}, r"agent\.loop='while'; allowed: \('scan', 'unroll'\)"),
    ("impala", {"run_dir": "/proc/sebulba-test/run"}, r"run_dir='/proc/sebulba-test/run' is "
                                                       r"not writable"),
    ("impala", {"run_dir": "<tmp>/a_file/run"}, r"run_dir=.*a_file/run'.*is not a directory"),
    ("impala", {"resume": "<tmp>/nowhere"}, r"resume=.*nowhere': no checkpoint at"),
    ("impala", {"distributed.mode": "maybe"}, r"distributed\.mode='maybe'; allowed: 'auto'"),
    ("impala", {"distributed.num_processes": 2, "distributed.process_id": 2},
     r"distributed\.process_id=2 must be in \[0, 1\]"),
    ("impala", {"distributed.num_processes": 2, "distributed.coordinator_address": "x"},
     r"distributed\.coordinator_address='x' must be host:port"),
    ("impala", {"distributed.num_processes": 2,
                "distributed.coordinator_address": "no-such-host.invalid:1234"},
     r"coordinator_address='no-such-host\.invalid:1234': host 'no-such-host\.invalid' does "
     r"not resolve"),
]


@pytest.mark.parametrize("algo, overrides, match", BAD,
                         ids=[",".join(o) + f"-{i}" for i, (_, o, _) in enumerate(BAD)])
def test_bad_config_names_field_and_value(tmp_path, algo, overrides, match):
    (tmp_path / "a_file").write_text("")
    config = _config(algo, tmp_path, overrides)
    with pytest.raises(ValueError, match=match):
        _validate(algo, config)


@pytest.mark.parametrize("algo", ["impala", "ppo"])
def test_shipped_configs_validate(tmp_path, algo):
    rc = _validate(algo, _config(algo, tmp_path, {}))
    assert rc.max_nonfinite_updates == 10 and rc.restart_envs_on_error is False


def test_occupied_coordinator_port_is_refused_for_process_0(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        config = _config("impala", tmp_path, {"distributed.num_processes": 2,
                                              "distributed.coordinator_address":
                                                  f"127.0.0.1:{port}"})
        with pytest.raises(ConfigError, match=rf"process 0 cannot listen on port {port}"):
            _validate("impala", config, devices=False)


@pytest.mark.parametrize("run, algo", [(impala_atari.run, "impala"), (ppo_atari.run, "ppo")])
def test_run_fails_before_building_anything(tmp_path, monkeypatch, run, algo):
    built = []
    monkeypatch.setattr(envs, "make_env", lambda *a, **k: built.append(a))
    config = _config(algo, tmp_path, {"agent.discount": 2.0})
    start = time.time()
    with pytest.raises(ConfigError, match=r"agent\.discount=2\.0"):
        run(config)
    assert time.time() - start < 10
    assert built == [] and not os.path.exists(config.run_dir)
