"""PPO (Schulman et al. 2017) on the Sebulba runtime: on-policy, or importance-corrected with
V-trace (Espeholt et al. 2018) when actors run ahead of the learner. See docs/ppo.md."""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from agents import normalization, policy
from agents.ppo.acting import make_actor_step
from agents.ppo.config import PPOConfig
from agents.ppo.learning import LearnerState, ValueNorm, make_learn_step, make_optimizer
from sebulba.agent import Agent


def make_agent(network: nn.Module, cfg: PPOConfig, num_updates: int,
               batch_envs: int = 0) -> Agent:
    """Builds the PPO agent for an actor-critic `network` (networks.ActorCritic: policy
    params for `network.dist`, value; or networks.RecurrentActorCritic, docs/recurrent.md,
    which needs `cfg.minibatch_axis="env"`). `batch_envs` (env columns per update, all hosts) is
    needed only for `cfg.reward_scaling`.

    `cfg.correction` must be "none" or "vtrace"; resolve "auto" for the runtime's mode first
    with `cfg.resolve(synchronous)`.
    """
    optimizer, lr = make_optimizer(cfg, num_updates)
    learn_step = make_learn_step(network, cfg, optimizer, lr)

    def init(key: jax.Array, obs) -> LearnerState:
        init_key, shuffle_key = jax.random.split(key)
        params = policy.init_params(network, init_key, obs)
        norm = normalization.init_state(obs, cfg.obs_norm, cfg.reward_scaling, batch_envs)
        return LearnerState(params, optimizer.init(params), jnp.zeros((), jnp.int32),
                            shuffle_key, ValueNorm.zeros(), norm)

    return Agent(init=init, actor_params=lambda s: policy.actor_params(s.params, s.norm, cfg),
                 actor_step=make_actor_step(network, cfg), learn_step=learn_step,
                 initial_core_state=policy.initial_core_state(network))


__all__ = ["LearnerState", "PPOConfig", "make_agent"]
