"""Anakin end to end through the experiment wiring (experiments/train.py with
experiments/configs/ppo_gymnax.py): learning, run-dir files, checkpoints and resume, and the
config errors that name the field."""
import json

import pytest

from experiments import train
from podracer.validation import ConfigError
from tests.helpers import read_metrics


def test_periodic_evaluations_and_the_final_one_are_logged(ppo_gymnax_config, tmp_path):
    """The run a new user tried: 48 updates of gymnax CartPole with eval_every_updates=10 used
    to log no evaluation (the first one was still compiling when the run ended, ~1 s after the
    first update). Compiled from scratch (no persistent cache) as on a first launch."""
    result = train.run(ppo_gymnax_config(total_env_steps=100_000, eval_every_updates=10,
                                         compilation_cache_dir="", checkpoint_keep=0))
    assert result.updates == 48
    evals = [r for r in read_metrics(tmp_path / "run") if "eval/return_mean" in r]
    updates = [r["eval/update"] for r in evals]
    # 20, 30 or 40 may be skipped (the one before still playing); 10 and the final are kept.
    assert updates[0] == 10 and updates[-1] == 48 and set(updates) <= {10, 20, 30, 40, 48}
    for r in evals:
        assert r["step"] == r["eval/update"] * 2048 and r["eval/episodes"] == 10
        assert r["eval/return_mean"] == pytest.approx(r["eval/length_mean"])
    summary = json.load(open(tmp_path / "run" / "summary.json"))
    assert summary["eval/update"] == 48


def test_checkpoint_and_resume_continue_the_run(ppo_gymnax_config, tmp_path):
    small = dict(num_envs=8, unroll_length=16, **{"agent.num_minibatches": 2},
                 checkpoint_every_updates=1, checkpoint_keep=2)
    first = train.run(ppo_gymnax_config(total_env_steps=256, eval_every_updates=1,
                                        eval_episodes=4, eval_num_envs=2, **small))
    assert first.updates == 2 and first.checkpoint.endswith("/2")
    # Evaluations at updates 1 and 2 (the final one), each waited for at the end.
    assert [r["eval/update"] for r in read_metrics(tmp_path / "run")
            if "eval/return_mean" in r] == [1, 2]
    resumed = train.run(ppo_gymnax_config(total_env_steps=512, resume=str(tmp_path / "run"),
                                          **small))
    assert resumed.updates == 4 and resumed.env_steps == 512
    steps = [r["step"] for r in read_metrics(tmp_path / "run") if "eval/return_mean" not in r]
    assert steps == [128, 256, 384, 512]


@pytest.mark.parametrize("overrides,match", [
    ({"runtime": "podracer"}, r"runtime='podracer' is not a runtime; allowed"),
    ({"env.name": "Pong-v5"}, r"env.name='Pong-v5'.*gymnax:<id>"),
    ({"learner_device_ids": (0, 1, 2), "num_envs": 64}, r"num_envs.*divisible"),
    ({"eval_policy": "best"}, r"eval_policy='best'"),
    ({"env.options": {"max_steps": 3}}, r"unknown EnvParams field"),
    ({"env.workers": 2}, r"env.workers=2: worker processes step Python envs under "
                         r"runtime='sebulba'"),
])
def test_config_errors_name_the_field(ppo_gymnax_config, overrides, match):
    with pytest.raises(ConfigError, match=match):
        train.run(ppo_gymnax_config(**overrides))


@pytest.mark.parametrize("hook", ["make_env", "wrap_env"])
def test_host_env_hooks_are_refused_naming_them(ppo_gymnax_config, hook):
    """make_env and wrap_env are Sebulba's host env batches: Anakin says so instead of
    silently training on its own env."""
    kwargs = {"make_env": lambda n, seed: None} if hook == "make_env" else {
        "wrap_env": lambda env: env}
    with pytest.raises(ConfigError, match=rf"runtime='anakin' steps the JAX-native env "
                                          rf"env\.name='gymnax:CartPole-v1' on the devices; "
                                          rf"{hook} \(host env batches\) apply to "
                                          rf"runtime='sebulba' only"):
        train.run(ppo_gymnax_config(), **kwargs)


def test_anakin_fields_have_a_schema(ppo_gymnax_config):
    from experiments import wiring
    from anakin.runtime_config import AnakinConfig
    s = wiring.read(ppo_gymnax_config(updates_per_call=3), devices=False)
    assert isinstance(s.runtime, AnakinConfig) and s.runtime.updates_per_call == 3
    assert s.shape.on_policy and s.shape.batch_envs == 64
    with pytest.raises(ConfigError, match=r"updates_per_call=0 must be a positive integer"):
        wiring.read(ppo_gymnax_config(updates_per_call=0), devices=False)
    assert set(wiring.DRIVERS) == set(wiring.RUNTIMES)  # every runtime a config may name


def test_each_runtime_reads_its_own_env_section(ppo_gymnax_config):
    """Anakin reads the env fields every runtime reads (podracer.env_config.EnvSection), not
    Sebulba's EnvPool settings, which the shared config carries for runtime='sebulba'; a bad
    shared field is still named, and Sebulba reads the same section as its EnvConfig."""
    from experiments import wiring
    from podracer.env_config import EnvSection
    from sebulba.envs import EnvConfig
    s = wiring.read(ppo_gymnax_config(**{"env.randomize": "length=uniform(0.4, 0.6)"}),
                    devices=False)
    assert type(s.env) is EnvSection and not isinstance(s.env, EnvConfig)
    assert (s.env.name, s.env.randomize) == ("gymnax:CartPole-v1", "length=uniform(0.4, 0.6)")
    with pytest.raises(ConfigError, match=r"env.action_mask_empty='never' must be one of"):
        wiring.read(ppo_gymnax_config(**{"env.action_mask_empty": "never"}), devices=False)
    host = wiring.read(ppo_gymnax_config(runtime="sebulba"), devices=False)
    assert type(host.env) is EnvConfig and host.env.name == "gymnax:CartPole-v1"


def test_sebulba_trains_the_same_jax_env_through_the_host(ppo_gymnax_config, tmp_path):
    """gymnax:CartPole-v1 under runtime='sebulba' (sebulba/jax_host_env.py): the same config,
    the same env and episode semantics as under Anakin, stepped by actor threads."""
    config = ppo_gymnax_config(runtime="sebulba", num_envs=8, unroll_length=16,
                               total_env_steps=8 * 16 * 6, **{"agent.num_minibatches": 2},
                               eval_every_updates=3, eval_episodes=2, eval_num_envs=2)
    result = train.run(config)
    assert (result.updates, result.env_steps) == (6, 8 * 16 * 6)
    assert result.last_metrics["episode/count"] > 0
    assert result.last_metrics["policy_lag/max"] == 0  # synchronous, as ppo_gymnax says
    summary = json.load(open(tmp_path / "run" / "summary.json"))
    assert summary["runtime"] == "sebulba"
