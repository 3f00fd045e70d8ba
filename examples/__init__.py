"""Worked examples of bringing your own environment, network and agent (docs/howto_*.md)."""
