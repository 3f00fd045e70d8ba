"""Periodic evaluation hooked into a run, on either runtime: greedy or sampled whole games
every `eval_every_updates` updates, played by the runtime's own game loop (Sebulba: a host env
batch, sebulba/evaluation.py; Anakin: compiled on the device, anakin/evaluation.py) in the
background of training (podracer/evaluation.py), with the player the agent package supplies
(agents/evaluation.py)."""
from __future__ import annotations

import jax

from agents import evaluation as players  # the evaluation players
from experiments.wiring.drivers.protocol import Started
from experiments.wiring.sections import Sections
from podracer.agent import Agent
from podracer.evaluation import PeriodicEvaluator
from podracer.validation import ConfigError


class EvalHook:
    """The run's `on_update`: triggers the evaluator (and then the caller's own hook, if any).
    It says when it is due (podracer.ledger.UpdateHook), so a fused Anakin call ends there, and
    hands the evaluator the policy of the run's last update (`final`)."""

    def __init__(self, evaluator: PeriodicEvaluator, then=None) -> None:
        self.evaluator, self.then = evaluator, then

    def due(self, update: int) -> bool:
        return self.evaluator.due(update)

    def __call__(self, update: int, env_steps: int, state) -> None:
        self.evaluator.on_update(update, env_steps, state)
        if self.then is not None:
            self.then(update, env_steps, state)

    def final(self, update: int, env_steps: int, state) -> None:
        self.evaluator.final(update, env_steps, state)


def with_evaluation(sections: Sections, network, agent: Agent, started: Started, logger,
                    on_update=None) -> tuple[EvalHook, PeriodicEvaluator]:
    """Starts the background evaluator (its game loop compiles beside the training's); returns
    the hook that triggers it and the evaluator. Call it before training starts: an
    `eval_policy` that cannot play `agent` (greedy play of `network`, the one the config
    describes, for an agent with its own network and no `greedy_step`) is a ConfigError here,
    not a warning at the first evaluation."""
    run = sections.run
    ap = jax.eval_shape(lambda key: agent.actor_params(agent.init(key, started.example_obs)),
                        jax.random.key(0))
    try:  # traced on the example obs now: a policy that cannot play fails before training
        player = players.eval_player(run.eval_policy, network, agent, ap, started.example_obs)
    except players.EvalPolicyError as e:
        raise ConfigError(f"eval_policy={run.eval_policy!r}: {e}") from None
    evaluator = PeriodicEvaluator(play=started.play_for(player, run),
                                  actor_params=agent.actor_params, logger=logger,
                                  every_updates=run.eval_every_updates,
                                  episodes=run.eval_episodes, wait_s=run.eval_wait_s)
    # The initial policy, made in the warm-up thread: it only gives the compile its shapes.
    evaluator.warm_up(lambda: agent.actor_params(agent.init(jax.random.key(0),
                                                            started.example_obs)))
    logger.on_close(evaluator.close)
    return EvalHook(evaluator, on_update), evaluator
