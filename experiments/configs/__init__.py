"""ml_collections configs, one file per experiment; variants via `--config=file.py:variant`."""
