"""Sebulba runtime: devices, actor threads, queues, environments and logging.

Knows nothing about any particular algorithm: an agent plugs in through `podracer.agent.Agent`.
"""
