"""Periodic evaluation hooked into a run (either runtime): greedy or sampled whole games in the
background every `eval_every_updates` (sebulba/evaluation.py plays them; the agent package
supplies the player)."""
from __future__ import annotations

import jax

from agents import evaluation as players  # the evaluation players
from experiments.wiring.sections import Sections
from sebulba import envs, evaluation
from sebulba.agent import Agent
from sebulba.validation import ConfigError


def with_evaluation(sections: Sections, network, agent: Agent, example_obs, user_make_env,
                    logger, on_update):
    """Starts the background evaluator; returns the on_update hook that triggers it (and calls
    the caller's own `on_update`, if any), and the evaluator. Call it before training starts:
    an `eval_policy` that cannot play `agent` (greedy play of `network`, the one the config
    describes, for an agent with its own network and no `greedy_step`) is a ConfigError here,
    not a warning at the first evaluation."""
    run = sections.run
    kind = run.eval_policy
    ap = jax.eval_shape(lambda key: agent.actor_params(agent.init(key, example_obs)),
                        jax.random.key(0))
    obs_clip = float(getattr(sections.agent, "obs_clip", 10.0))
    try:  # traced on the example obs now: a policy that cannot play fails before training
        player = players.eval_player(kind, network, agent, ap, example_obs, obs_clip)
    except players.EvalPolicyError as e:
        raise ConfigError(f"eval_policy={kind!r}: {e}") from None
    eval_cfg = evaluation.eval_env_config(sections.env)
    # Env ids get the evaluation settings (whole games); a user's env factory is used as is.
    make_env = user_make_env or (lambda n, seed: envs.make_env(eval_cfg, n, seed))
    evaluator = evaluation.PeriodicEvaluator(
        new_actor=player.actor, actor_params=agent.actor_params, make_env=make_env,
        logger=logger,
        every_updates=run.eval_every_updates, episodes=run.eval_episodes,
        num_envs=run.eval_num_envs)
    logger.on_close(evaluator.close)

    def hook(update: int, env_steps: int, state) -> None:
        evaluator.on_update(update, env_steps, state)
        if on_update is not None:
            on_update(update, env_steps, state)
    return hook, evaluator
