"""Older versions of runtime code, kept only to be measured beside today's in the same run."""
