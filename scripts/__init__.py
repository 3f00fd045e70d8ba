"""The user's tools, run from the checkout's root as `python -m scripts.<tool>`: evaluate and
render a checkpoint, plot and tabulate runs, launch a sweep, measure a random policy's scores.
`scripts.analysis` reads run directories for them; `scripts.launch` starts multi-host jobs."""
