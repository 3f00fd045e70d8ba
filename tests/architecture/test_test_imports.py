"""No test module imports another test module, read from the source (function-level imports
included). What tests share lives in support modules without the `test_` prefix
(tests/helpers.py, tests/multihost.py, tests/fakes/faulty_env.py, ...): importing a test
module runs its module-level code and can collect its tests twice, and a helper kept in one
test file is easily changed for that file's sake alone."""
from __future__ import annotations

import pathlib

from tests.architecture.imports import imported_names, module_name

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _test_modules_imported(source: str, module: str, is_package: bool = False,
                           test_stems: frozenset[str] = frozenset()) -> list[str]:
    """The test modules (a `test_*` module of the tests package, or a bare name that is a
    test file's stem) that `source` imports."""
    hits = set()
    for name in imported_names(source, module, is_package):
        parts = name.split(".")
        if parts[0] == "tests" and any(p.startswith("test_") for p in parts[1:]):
            hits.add(".".join(parts[: next(i for i, p in enumerate(parts)
                                           if p.startswith("test_")) + 1]))
        elif len(parts) == 1 and parts[0] in test_stems:
            hits.add(parts[0])
    return sorted(hits)


def _test_files() -> list[pathlib.Path]:
    return sorted(TESTS.rglob("*.py"))


def test_the_checker_finds_every_form_of_a_test_import():
    src = "\n".join([
        "from tests.sebulba.test_checkpoint import restore_run",
        "import tests.agents.test_returns",
        "from tests.sebulba import test_faults",
        "from .test_layout import X",
        "from . import test_envs as envs_tests",
        "import test_topology",
        "def f():",
        "    from ..agents.test_schedules import S",  # a local import hides as well
        "from tests.helpers import classic_config",  # support modules are fine
        "from tests.fakes.faulty_env import faulty",
        "from . import first_steps",
    ])
    found = _test_modules_imported(src, "tests.sebulba.test_shutdown",
                                   test_stems=frozenset({"test_topology"}))
    assert found == ["test_topology", "tests.agents.test_returns", "tests.agents.test_schedules",
                     "tests.sebulba.test_checkpoint", "tests.sebulba.test_envs",
                     "tests.sebulba.test_faults", "tests.sebulba.test_layout"]


def test_the_tests_are_read():
    files = _test_files()
    assert len(files) > 50
    learner = TESTS / "sebulba" / "test_learner.py"
    assert "tests.helpers" in imported_names(learner.read_text(), module_name(learner, ROOT))


def test_no_test_module_imports_another_test_module():
    stems = frozenset(p.stem for p in _test_files() if p.stem.startswith("test_"))
    bad = []
    for path in _test_files():
        hits = _test_modules_imported(path.read_text(), module_name(path, ROOT),
                                      path.name == "__init__.py", stems)
        bad += [f"{path.relative_to(ROOT)} imports {hit}" for hit in hits]
    assert not bad, ("move what test modules share into tests/helpers.py (or another "
                     f"support module without the test_ prefix): {bad}")
