"""Experiment entry points: `python experiments/<algo>_<domain>.py --config=...`."""
