"""Algorithms for either runtime (Sebulba, Anakin); each sub-package builds a
`podracer.agent.Agent`.

Every agent package declares one `AgentSpec` (agents/builders.py): its name, its frozen
hyperparameter dataclass, the checks that span config sections, and its builder:

    SPEC = AgentSpec("ppo", build, PPOConfig, checks=(check_minibatches,), describe=describe)
    build(network, agent_config, batch, num_updates) -> podracer.agent.Agent
    check(agent_config, batch, network_config) -> None   # raises ValueError

`agent_config` is an instance of the spec's config class, already built and range-checked by
the caller; `batch` is the run's `podracer.batch.BatchShape`, all an agent knows of the runtime
(given after the run joined its multi-host job, so `batch.batch_envs` counts every host);
`num_updates` is the learning-rate schedule's horizon; `network_config` is the run's
`networks.NetworkConfig`. Agents import only the core (podracer) and networks.

IMPALA (agents/impala) and PPO (agents/ppo) are built in and loaded on first use; a user agent
is added with `register_agent(name, build, config_cls=..., checks=..., describe=...)` in a module the run
loads with `--import` (docs/howto_agent.md). `get_agent(name)` returns a spec (unknown names
fail naming the close matches); `registered_agents()` lists them all.

Shared pieces: agents/acting.py (actor params and the sampling actor step), agents/unroll.py
(running a network over a rollout, recurrent cores included), agents/normalization.py
(observation normalisation and reward scaling), agents/evaluation.py (evaluation players).
"""
from agents.builders import AgentSpec, get_agent, register_agent, registered_agents

__all__ = ["AgentSpec", "get_agent", "register_agent", "registered_agents"]
