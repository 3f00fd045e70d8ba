"""Fixtures of the scripts' tests."""
import matplotlib.pyplot as plt
import pytest


@pytest.fixture
def figures(monkeypatch):
    """The figures plot.py draws, kept open for inspection (it closes them after saving)."""
    kept, close = [], plt.close
    monkeypatch.setattr(plt, "close", kept.append)
    yield kept
    for fig in kept:
        close(fig)
