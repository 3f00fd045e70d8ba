"""Comparisons with other libraries on the same machine and task."""
