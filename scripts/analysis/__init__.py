"""Reading run directories and the statistics over them, shared by `scripts.plot` and
`scripts.sweep`. Nothing here imports JAX, so tables and plots are quick to make."""
