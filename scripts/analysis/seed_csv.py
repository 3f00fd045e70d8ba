"""The per-seed CSVs committed beside the docs (docs/minatar_ppo_pjx.csv, docs/driving_ppo.csv):
read them, and merge new rows in, replacing those of the same game or task."""
from __future__ import annotations

import csv
import os
from typing import Callable, Sequence


def read(path: str) -> list[dict]:
    """The CSV's rows as dicts of strings."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def merge(path: str, rows: list[dict], fields: Sequence[str], group: str,
          order: Callable[[dict], tuple]) -> None:
    """Writes `rows` into the CSV at `path` (made if missing): the rows of each value of the
    `group` column that `rows` hold replace those there, the others are kept; sorted by
    `order`."""
    groups = {r[group] for r in rows}
    kept = [r for r in read(path) if r[group] not in groups] if os.path.exists(path) else []
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(sorted(kept + rows, key=order))
