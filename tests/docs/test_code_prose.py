"""Code says what a thing is and why, not when it changed: no issue numbers, dates or work
items in the project's Python outside tests (history goes to CHANGELOG.md and commit
messages), and the public entry points document their arguments and results."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ("podracer", "sebulba", "anakin", "agents", "networks", "experiments", "scripts",
           "benchmarks", "examples")
HISTORY = {
    "an issue number": re.compile(r"\b[Ii]ssues? #?\d+"),
    # A pointer to a record in docs/journal/ (files named by their date) is not history.
    "a date": re.compile(r"(?<!journal/)\b20\d\d-[01]\d-[0-3]\d\b"),
    "a work item": re.compile(r"\b(item|part) \d+ of\b"),
}


def _sources():
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_the_sources_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert "anakin/loop.py" in names and "scripts/plot.py" in names


@pytest.mark.parametrize("kind", sorted(HISTORY))
def test_no_history_in_the_code(kind):
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in _sources()
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if HISTORY[kind].search(line)]
    assert not found, f"{kind} in the code (history belongs in CHANGELOG.md):\n" + \
        "\n".join(found)


def test_the_checks_catch_what_they_name():
    assert HISTORY["an issue number"].search("# fixed in issue 14")
    assert HISTORY["a date"].search("measured 2026-12-03 on 2 cores")
    assert not HISTORY["a date"].search("(docs/journal/2026-12-03-sixteen-seeds.md)")
    assert HISTORY["a work item"].search("(item 6 of issue 15)")
    assert not any(h.search("an issue with the layout, 128 envs") for h in HISTORY.values())


ENTRY_POINTS = {  # file -> function or class whose docstring documents its arguments
    "experiments/wiring/run.py": "run",
    "experiments/wiring/sections.py": "read",
    "sebulba/runner.py": "train",
    "anakin/loop.py": "train",
    "anakin/update_program.py": "make_update_fn",
    "agents/builders.py": "AgentSpec",
}


@pytest.mark.parametrize("path,name", sorted(ENTRY_POINTS.items()))
def test_public_entry_points_document_arguments_and_results(path, name):
    tree = ast.parse((ROOT / path).read_text())
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    doc = ast.get_docstring(node) or ""
    needed = ("Attributes:",) if isinstance(node, ast.ClassDef) else ("Args:", "Returns:")
    assert all(k in doc for k in needed), f"{path}:{name} lacks {needed}"
    if isinstance(node, ast.FunctionDef):  # every argument is named in Args
        args = [a.arg for a in node.args.args + node.args.kwonlyargs]
        if node.args.kwarg:
            args.append("**" + node.args.kwarg.arg)
        missing = [a for a in args if f"{a}:" not in doc]
        assert not missing, f"{path}:{name}: Args does not name {missing}"
