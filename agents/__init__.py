"""Algorithms for the Sebulba runtime; each sub-package builds a `sebulba.agent.Agent`.

`register_agent` (agents/registry.py) makes an agent buildable by name from
experiments/train.py (`--config.agent_name=...`).
"""
from agents.registry import AgentSpec, get_agent, register_agent, registered_agents

__all__ = ["AgentSpec", "get_agent", "register_agent", "registered_agents"]
