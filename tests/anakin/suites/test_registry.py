"""anakin/suites: names by prefix, nothing imported until a name is made, and a missing extra
is one line naming what to install (run without any suite installed too)."""
import importlib.util
import subprocess
import sys

import pytest

from anakin import envs, suites


def test_every_suite_name_is_a_jax_env_and_others_are_not():
    for prefix, suite in suites.SUITES.items():
        for env_id in suite.examples:
            assert envs.names_a_jax_env(f"{prefix}:{env_id}")
    assert not envs.names_a_jax_env("Pong-v5")
    assert not envs.names_a_jax_env("nosuchsuite:Thing-v0")


def test_naming_a_suite_imports_nothing():
    """names_a_jax_env runs before a multi-host join: it must not import a suite (nor JAX)."""
    code = ("import sys; from anakin import envs; envs.names_a_jax_env('brax:ant'); "
            "print(sorted(m for m in ('brax', 'jumanji', 'craftax', 'navix', 'xminigrid', "
            "'pgx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "[]"


def test_missing_extra_is_one_line_naming_the_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jumanji" else real(name, *a))
    with pytest.raises(ValueError) as e:
        envs.make_env("jumanji:Snake-v1")
    message = str(e.value)
    assert "\n" not in message
    assert "jumanji" in message and "pip install -r requirements-jumanji.txt" in message


def test_empty_id_names_examples():
    with pytest.raises(ValueError, match=r"no env id after 'navix:'.*navix:Navix-Empty-8x8-v0"):
        envs.make_env("navix:")


def test_every_suite_has_its_requirements_file_and_extra():
    import os
    import tomllib
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    extras = tomllib.load(open(os.path.join(root, "pyproject.toml"), "rb"))["project"][
        "optional-dependencies"]
    everything = open(os.path.join(root, "requirements-suites.txt")).read()
    for suite in suites.SUITES.values():
        assert suite.extra in extras
        assert os.path.isfile(os.path.join(root, f"requirements-{suite.extra}.txt"))
        assert f"-r requirements-{suite.extra}.txt" in everything
