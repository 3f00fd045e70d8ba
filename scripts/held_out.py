"""Held-out scenarios for scripts/evaluate.py (`--scenario RANDOMIZE`, repeatable): the run's
env with env.randomize replaced (podracer/scenarios.py; "none" = the fixed env.options),
played on the same evaluation seeds, one row each, and the Markdown table that compares them
with the run's own env."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from experiments import wiring
from podracer import scenarios
from podracer.evaluation import summarize
from podracer.episode_metrics import metric_means
from sebulba.evaluation import play


def play_scenarios(new_actor: Callable, env_cfg: Any, randomizes: Sequence[str], text: str,
                   episodes: int, num_envs: int, seed: int, metrics_of: Callable) -> list[dict]:
    """One row per scenario: its games' summary and the means of the episode metrics of
    `text` it reports and its drawn fields (`metrics_of(make_env, text, env_name,
    randomize)` resolves them). Raises ValueError naming the scenario (a text that does not
    parse, a field the env cannot vary: one env is built first, on any route)."""
    rows = []
    for randomize in randomizes:
        try:
            cfg = scenarios.held_out(dataclasses.replace(env_cfg, episode_metrics=text),
                                     randomize)
            make_env = wiring.host_envs(cfg, whole_games=True)
            make_env(1, seed).close()  # a field this env cannot vary fails here, named
            metrics = metrics_of(make_env, cfg.episode_metrics, cfg.name, cfg.randomize)
        except ValueError as e:
            raise ValueError(f"--scenario {randomize!r}: {e}") from None
        returns, lengths, values = play(new_actor, make_env, episodes, num_envs, seed,
                                        metrics=metrics)
        rows.append({"scenario": randomize, "episodes": len(returns), **summarize(returns),
                     "length_mean": float(np.mean(lengths)),
                     **({"episode_metrics": metric_means(values)} if metrics else {})})
    return rows


def table(trained: dict, rows: list[dict]) -> str:
    """The Markdown table of the scenarios' rows after the run's own env (`trained`, with its
    `randomize`)."""
    names = list(trained.get("episode_metrics", {}))
    lines = ["| scenario | games | mean | median | std | " + " | ".join(names)
             + (" |" if names else "|"), "|---" * (5 + len(names)) + "|"]
    for label, row in [(f"trained: {trained['randomize'] or 'fixed options'}", trained),
                       *[(r["scenario"], r) for r in rows]]:
        extra = [f"{row.get('episode_metrics', {}).get(n, float('nan')):.3g}" for n in names]
        lines.append(f"| {label} | {row['episodes']} | {row['mean']:.2f} | "
                     f"{row['median']:.2f} | {row['std']:.2f} | " + " | ".join(extra)
                     + (" |" if extra else "|"))
    return "\n".join(lines)
