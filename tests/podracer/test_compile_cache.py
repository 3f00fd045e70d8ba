"""podracer/compile_cache.py: where JAX's persistent cache goes and which programs it keeps."""
import os
import subprocess
import sys

from tests.helpers import ROOT

_PROBE = """
import os, sys
import jax
from podracer import compile_cache
first = compile_cache.enable(sys.argv[1])
default = jax.config.jax_persistent_cache_min_compile_time_secs
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"  # as if set before the launch
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # JAX reads it at import
compile_cache.enable(sys.argv[2])
print(first == os.path.abspath(sys.argv[1]), compile_cache.enable("") is None,
      jax.config.jax_compilation_cache_dir == os.path.abspath(sys.argv[2]), default,
      jax.config.jax_persistent_cache_min_compile_time_secs)
"""


def test_small_programs_are_skipped_unless_the_user_sets_jaxs_own_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "a"), str(tmp_path / "b")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "True", "True", "0.2", "0.0"], proc.stdout
    assert (tmp_path / "a").is_dir() and (tmp_path / "b").is_dir()
