"""Measurements of the runtimes, run from the checkout's root as `python -m benchmarks.<name>`:
throughput (Sebulba's four measures, Anakin rows beside them), anakin_throughput, startup_time,
memory_soak, study_table; peers/ compares against other libraries on the same machine,
baselines/ keeps older code measured beside today's, gpu/ holds the GPU study's launchers.
Results and how to read them: docs/benchmarks.md."""
