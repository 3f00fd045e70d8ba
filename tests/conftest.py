"""Test setup: fake 4 CPU devices before JAX initialises (never done in library code), pytest's
assertion messages for the shared helpers' own asserts, the `slow` mark of tests/slow/, and the
fixtures of the quick configs most tests train (`impala_classic_config`, `ppo_gymnax_config`)."""
import os

import pytest

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=4").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Before any test module imports them: their asserts then explain a failure as a test's do.
pytest.register_assert_rewrite("tests.helpers", "tests.multihost")

# JAX's persistent compilation cache at a run's default place, on from the first test: a test
# then loads what an earlier session (or an earlier test in this one) compiled, whatever the
# order, as a second launch of a run does. JAX sets its cache up once per process, so a test's
# `compilation_cache_dir=""` does not turn it off; a test that checks compiling reads JAX's
# compile log, which names a cache hit as it does a compilation.
# Every program is cached, however small, here and in the processes tests start (they inherit
# the variable): a run caches only those that take 0.2 s or more to compile, but tests run
# thousands of small ones (eager ops, tiny networks), whose compilation is most of a quick
# test's time; read back, tests/networks/test_distributions.py runs 2.4x faster.
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
from podracer import compile_cache  # noqa: E402  (after XLA_FLAGS: it imports jax)

compile_cache.enable(compile_cache.DEFAULT_DIR)

# `import envpool` imports matplotlib, whose first import on a machine builds its font cache and
# logs that on stderr: built here, once, a test's subprocess prints only what the run prints.
import matplotlib.font_manager  # noqa: E402,F401

_SLOW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow") + os.sep


def pytest_collection_modifyitems(config, items):
    """Everything under tests/slow/ (learning runs, several processes, runs in subprocesses) is
    marked `slow`, which the quick loop `-m "not slow"` leaves out."""
    for item in items:
        if str(item.path).startswith(_SLOW):
            item.add_marker(pytest.mark.slow)


# --- the quick configs most tests start from ---------------------------------------------------
# Factories bound to the test's tmp_path: `impala_classic_config(**dotted_overrides)` is the
# config the test trains, writing to tmp_path/run with a quiet console; `under="name"` writes
# to tmp_path/name/run instead (a second run of one test). Processes a test starts
# (tests/programs/) build theirs with tests.helpers.quiet_config.

def _config_factory(get_config, tmp_path):
    from tests.helpers import quiet_config

    def make(under: str = "", **overrides):
        folder = tmp_path / under if under else tmp_path
        return quiet_config(get_config(), folder / "run", **overrides)
    return make


@pytest.fixture
def impala_classic_config(tmp_path):
    """IMPALA on EnvPool CartPole-v1 (experiments/configs/impala_classic.py), Sebulba."""
    from experiments.configs import impala_classic
    return _config_factory(impala_classic.get_config, tmp_path)


@pytest.fixture
def ppo_gymnax_config(tmp_path):
    """PPO on gymnax CartPole-v1 (experiments/configs/ppo_gymnax.py), Anakin."""
    from experiments.configs import ppo_gymnax
    return _config_factory(ppo_gymnax.get_config, tmp_path)
