"""Config system and an Atari smoke run of experiments/impala_atari.py."""
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from experiments.configs import impala_atari as atari_cfg
from tests.helpers import run_command_lines

DEBUG = "--config=experiments/configs/impala_atari.py:debug"


@pytest.fixture(scope="module")
def command_lines(tmp_path_factory):
    """The module's command lines, run as a user runs them (one process, a child each:
    tests.helpers.run_command_lines): a misspelt override, an unknown env, a Breakout run."""
    folder = tmp_path_factory.mktemp("command_lines")
    cases = {"misspelt": [DEBUG, "--config.num_env=8"],
             "unknown_env": [DEBUG, "--config.env.name=Pongg-v5", f"--config.run_dir={folder}/r"],
             "breakout": [DEBUG, "--config.env.name=Breakout-v5", "--config.num_envs=4",
                          f"--config.run_dir={folder}/atari"]}
    results = run_command_lines([{"script": "impala_atari.py", "args": args}
                                 for args in cases.values()], folder)
    return {"folder": folder, **dict(zip(cases, results))}


def test_default_config_fields():
    config = atari_cfg.get_config()
    assert config.env.name == "Breakout-v5" and config.agent.discount == 0.99
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        atari_cfg.get_config("nope")


def test_misspelt_override_fails_clearly(command_lines):
    proc = command_lines["misspelt"]
    assert proc.returncode != 0
    assert "num_env" in proc.stderr and "num_envs" in proc.stderr  # names a close match


def test_unknown_env_fails_before_training(command_lines):
    proc = command_lines["unknown_env"]
    assert proc.returncode != 0 and "Close matches: Pong-v5" in proc.stderr


def test_atari_smoke_run_writes_tensorboard(command_lines):
    run_dir = command_lines["folder"] / "atari"
    proc = command_lines["breakout"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    for tag in ("loss/total", "sps", "policy_lag/mean", "optim/grad_norm"):
        assert tag in tags, tags
    events = acc.Scalars("loss/total")
    assert len(events) >= 2 and events[-1].step >= 256
    assert (run_dir / "metrics.jsonl").exists() and (run_dir / "config.json").exists()
