"""PPO's rules that span config sections, each written once.

The experiment runs `check_minibatches` on the config before anything is built; the learner
step calls the same two rules on what it sees at trace time (a user calling `make_agent`
directly skips the config check), so both fail with one message.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from agents import minibatches
from agents.ppo.config import PPOConfig

if TYPE_CHECKING:
    from networks import NetworkConfig
    from podracer.batch import BatchShape


def require_whole_sequences(minibatch_axis: str, lstm_size: int | None) -> None:
    """A recurrent core is re-run over whole env sequences, so its minibatches must be whole
    env columns. `lstm_size`: network.lstm_size (0: feed-forward), or None for a recurrent
    network that does not say its size."""
    if lstm_size != 0 and minibatch_axis != "env":
        core = "a recurrent network" if lstm_size is None else f"network.lstm_size={lstm_size}"
        raise ValueError(
            f"agent.minibatch_axis={minibatch_axis!r} cannot be used with {core}: a recurrent "
            f"core is re-run over whole env sequences; use agent.minibatch_axis=\"env\" "
            f"(docs/recurrent.md).")


def require_divisible(num_minibatches: int, per_learner: int, minibatch_axis: str) -> None:
    """`num_minibatches` must divide what each learner device splits per update:
    `per_learner` env columns ("env" axis) or steps ("sample": unroll_length x envs)."""
    what = "environments" if minibatch_axis == "env" else "steps (unroll_length x envs)"
    minibatches.require_divisible(num_minibatches, per_learner, what)


def check_minibatches(cfg: PPOConfig, batch: BatchShape,
                      network_config: NetworkConfig) -> None:
    """Fails before any thread starts when the env columns (or, with
    minibatch_axis="sample", the steps) do not split into minibatches, or when a recurrent
    network (network_config.lstm_size > 0) is asked for minibatches of single steps."""
    require_whole_sequences(cfg.minibatch_axis, network_config.lstm_size)
    per_learner = batch.envs_per_learner
    if cfg.minibatch_axis == "sample":
        per_learner *= batch.unroll_length
    require_divisible(cfg.num_minibatches, per_learner, cfg.minibatch_axis)
