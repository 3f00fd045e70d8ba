"""benchmarks/harness/populations.py: rows appended under one header, and a failing tool run
stopping with what the tool printed."""
import csv
import sys

import pytest

from benchmarks.harness.populations import append_rows, run_quietly


def test_rows_are_appended_under_one_header(tmp_path):
    path = str(tmp_path / "r.csv")
    append_rows(path, ("a", "b"), [{"a": 1, "b": 2}])
    append_rows(path, ("a", "b"), [{"a": 3, "b": 4}])
    with open(path) as f:
        assert list(csv.DictReader(f)) == [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]


def test_a_failing_tool_shows_what_it_printed():
    run_quietly([sys.executable, "-c", "print('fine')"])  # a success says nothing
    script = "import sys; print('tried 3 games'); sys.exit('no checkpoint in runs/x')"
    with pytest.raises(SystemExit) as stop:
        run_quietly([sys.executable, "-c", script])
    message = str(stop.value)
    assert "failed with status 1" in message and "tried 3 games" in message
    assert "no checkpoint in runs/x" in message
