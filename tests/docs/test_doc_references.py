"""Every code reference in the README, docs/ and the examples' READMEs points at something that
exists, so a rename or a removed module cannot leave the docs describing code that is gone.

Checked: dotted names in backticks (`agents.acting.ActorParams`, `sebulba.runner.train`) import
and resolve attribute by attribute; repository paths (`sebulba/runner.py`, `agents/ppo/`,
`agents/returns.fold_truncation`) exist, with a `.attr` suffix resolved like a dotted name; and
relative Markdown links reach a file. Paths under docs/ that prepared commands will write (plots
and CSVs not made yet) are links to outputs, not to code, and are not checked.
"""
import glob
import importlib
import os
import re

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGES = sorted(["README.md"]
               + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))]
               + [os.path.relpath(p, ROOT)
                  for p in glob.glob(os.path.join(ROOT, "docs", "journal", "*.md"))]
               + [os.path.relpath(p, ROOT)
                  for p in glob.glob(os.path.join(ROOT, "examples", "*", "README.md"))])
PACKAGES = "sebulba|anakin|agents|networks|experiments"
_DOTTED = re.compile(rf"`((?:{PACKAGES})(?:\.\w+)+)")
_PATH = re.compile(rf"(?<![\w/.-])((?:{PACKAGES}|scripts|tests|examples)/[\w/.-]*\w)")
_LINK = re.compile(r"\]\(([^)#\s]+)")


def resolves(dotted: str) -> bool:
    """Whether `a.b.c` names a module, or an attribute chain of the longest importable prefix."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def path_exists(ref: str) -> bool:
    """A file or folder of the repository, or `path/module.attr` with the attribute present."""
    if os.path.exists(os.path.join(ROOT, ref)):
        return True
    module, dot, attrs = ref.partition(".")
    if not dot or not os.path.isfile(os.path.join(ROOT, module + ".py")):
        return False
    return resolves(module.replace("/", ".") + "." + attrs)


def _read(page: str) -> str:
    with open(os.path.join(ROOT, page)) as f:
        return f.read()


@pytest.mark.parametrize("page", PAGES)
def test_code_references_exist(page):
    text = _read(page)
    missing = sorted({m for m in _DOTTED.findall(text) if not resolves(m)}
                     | {m for m in _PATH.findall(text) if not path_exists(m)})
    assert not missing, f"{page} names code that does not exist: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_reach_a_file(page):
    base = os.path.dirname(os.path.join(ROOT, page))
    broken = sorted(t for t in _LINK.findall(_read(page))
                    if "://" not in t and not os.path.exists(os.path.join(base, t)))
    assert not broken, f"{page} links to missing files: {broken}"


def test_a_stale_reference_is_caught():
    """The checks can fail: the module this redesign removed, and a path that never existed."""
    assert not resolves("sebulba.experiment.run")
    assert not path_exists("agents/policy.py") and not path_exists("agents/acting.no_such_name")
    assert resolves("agents.acting.ActorParams") and path_exists("agents/returns.fold_truncation")
