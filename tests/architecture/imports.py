"""Reading a module's imports from its source, for the architecture tests: every import
statement (function-level ones included: a local import is how a dependency hides), relative
imports resolved to dotted names."""
from __future__ import annotations

import ast
import pathlib


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    """The dotted name of the module at `path` (a package for an __init__.py) under `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every dotted name the code `source` of `module` imports; for `from a import b` both
    `a` and `a.b` (b may be a submodule or a symbol: callers resolve it against the modules
    they know)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names
