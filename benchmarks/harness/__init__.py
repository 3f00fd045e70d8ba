"""What the throughput benchmarks share: the config of one layout (`config`), the measures
(`measures`) and the reporting of rows (`report`)."""
