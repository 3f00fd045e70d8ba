"""Algorithms for the Sebulba runtime; each sub-package builds a `podracer.agent.Agent`.

Every agent package declares one `AgentSpec` (agents/builders.py): its name, its frozen
hyperparameter dataclass, the checks that span config sections, and its builder:

    SPEC = AgentSpec("ppo", build, PPOConfig, checks=(check_minibatches,))
    build(network, agent_config, runtime, num_updates) -> podracer.agent.Agent
    check(agent_config, runtime, network_config) -> None   # raises ValueError

`agent_config` is an instance of the spec's config class, already built and range-checked by
the caller; `runtime` is the `sebulba.runtime_config.RuntimeConfig` of the run, known after it joined
its multi-host job (so `runtime.batch_envs` and `runtime.synchronous` are final); `num_updates`
is the learning-rate schedule's horizon; `network_config` is the run's `networks.NetworkConfig`.

IMPALA (agents/impala) and PPO (agents/ppo) are built in and loaded on first use; a user agent
is added with `register_agent(name, build, config_cls=..., checks=...)` in a module the run
loads with `--import` (docs/howto_agent.md). `get_agent(name)` returns a spec (unknown names
fail naming the close matches); `registered_agents()` lists them all.

Shared pieces: agents/acting.py (actor params and the sampling actor step), agents/unroll.py
(running a network over a rollout, recurrent cores included), agents/normalization.py
(observation normalisation and reward scaling), agents/evaluation.py (evaluation players).
"""
from agents.builders import AgentSpec, get_agent, register_agent, registered_agents

__all__ = ["AgentSpec", "get_agent", "register_agent", "registered_agents"]
