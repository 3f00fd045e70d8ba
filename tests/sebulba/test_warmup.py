"""Fast start (issue 14): the learner compiles in the background while the actors start, and
its first real update reuses that program instead of compiling it again."""
import logging

import jax
import pytest

from tests.helpers import classic_config

pytestmark = pytest.mark.slow  # learning runs / several processes: `-m "not slow"` skips

LEARNER = "Finished XLA compilation of jit(per_device)"  # sebulba/learner.py's program
POLICY = "Finished XLA compilation of jit(_policy_step)"


class _Compiles(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[tuple[str, str]] = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Finished XLA compilation"):
            self.records.append((record.threadName, message))

    def threads(self, prefix: str) -> list[str]:
        return [t for t, m in self.records if m.startswith(prefix)]


@pytest.fixture
def compiles():
    handler, logger = _Compiles(), logging.getLogger("jax")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    with jax.log_compiles(True):
        yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


@pytest.mark.parametrize("algo, overrides", [
    ("impala", {}),
    ("impala", {"learner_device_ids": (1, 2), "network.lstm_size": 8}),
    ("ppo", {"num_actor_threads": 2}),
])
def test_learner_compiles_once_in_the_background(tmp_path, compiles, capsys, algo, overrides):
    if algo == "ppo":
        from experiments import ppo_atari as experiment
        from experiments.configs import ppo_classic
        config = ppo_classic.get_config()
        config.run_dir, config.console_every_s = str(tmp_path / "run"), 1e9
        for key, value in overrides.items():
            config[key] = value
    else:
        from experiments import impala_atari as experiment
        config = classic_config(tmp_path, **overrides)
    config.total_env_steps = 3 * experiment_steps(config)
    config.compilation_cache_dir = ""  # compile for real: a cache hit would prove nothing
    config.checkpoint_keep = 0
    result = experiment.run(config)
    assert result.updates == 3
    # The learner's program was compiled exactly once, by the background thread; the first
    # update in the main thread found it. The policy is compiled once for all actor threads.
    assert compiles.threads(LEARNER) == ["compile-learner"], compiles.records
    assert len(compiles.threads(POLICY)) == 1
    out = capsys.readouterr().out
    assert "compiling the learner ..." in out and "learner compiled in" in out
    assert "compiling the policy on" in out


def experiment_steps(config) -> int:
    """Agent steps of one update of `config` (one actor device)."""
    threads = config.num_actor_threads or 1
    return len(config.actor_device_ids) * threads * config.num_envs * config.unroll_length
