"""Runs the tested code blocks of the how-to pages (docs/howto_*.md, docs/deploy.md) and of
docs/driving.md, so the docs cannot rot.

A block is tested when the line before its ```python fence is `<!-- test -->` (invisible when
rendered). The blocks of one page run in order in one namespace, like a notebook, from a
temporary working directory (run dirs go there); each page trains for a few updates only.
"""
import os
import re

import pytest

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
PAGES = ("howto_env.md", "howto_network.md", "howto_agent.md", "deploy.md", "driving.md")
_BLOCK = re.compile(r"<!-- test -->\n```python\n(.*?)```", re.DOTALL)


def blocks_of(page: str) -> list[str]:
    with open(os.path.join(DOCS, page)) as f:
        return _BLOCK.findall(f.read())


@pytest.mark.parametrize("page", PAGES)
def test_howto_snippets_run(page, tmp_path, monkeypatch):
    blocks = blocks_of(page)
    assert blocks, f"{page} has no tested blocks"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"howto_{page[:-3]}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page}[block {i}]", "exec"), namespace)  # noqa: S102
