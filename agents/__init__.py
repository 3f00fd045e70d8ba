"""Algorithms for the Sebulba runtime; each sub-package builds a `sebulba.agent.Agent`."""
