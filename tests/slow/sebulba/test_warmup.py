"""Fast start (issue 14): the learner compiles in the background while the actors start, and
its first real update reuses that program instead of compiling it again."""
import logging

import jax
import pytest


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
def test_learner_compiles_once_in_the_background(impala_classic_config, tmp_path, compiles, capsys,
                                                 algo, overrides):
    if algo == "ppo":
        from experiments import ppo_atari as experiment
        from experiments.configs import ppo_classic
        config = ppo_classic.get_config()
        config.run_dir, config.console_every_s = str(tmp_path / "run"), 1e9
        for key, value in overrides.items():
            config[key] = value
    else:
        from experiments import impala_atari as experiment
        config = impala_classic_config(**overrides)
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
    """Agent steps of one update of `config` (one process: num_envs is its batch)."""
    return config.num_envs * config.unroll_length


def test_init_is_compiled_and_an_untraceable_init_still_runs():
    """The runner jits `agent.init`; a user agent whose init branches on a value in Python
    (not traceable) is run eagerly instead of failing."""
    import jax.numpy as jnp
    import numpy as np

    from podracer.agent import Agent
    from sebulba.runner import _init

    traced = []

    def branchy(key, obs):
        traced.append(isinstance(obs, jax.core.Tracer))
        return {"w": jnp.ones(3) if float(np.asarray(obs).sum()) > 0 else jnp.zeros(3)}

    def plain(key, obs):
        traced.append(isinstance(obs, jax.core.Tracer))
        return {"w": jnp.full(3, obs.sum())}

    obs = np.ones((1, 2), np.float32)
    for fn, want in ((branchy, [True, False]), (plain, [True])):
        traced.clear()
        agent = Agent(init=fn, actor_params=lambda s: s, actor_step=None, learn_step=None)
        out = _init(agent, jax.random.key(0), obs)
        assert traced == want  # traced once (jit); the branchy one then ran eagerly
        np.testing.assert_allclose(out["w"], np.full(3, 2.0) if fn is plain else np.ones(3))
