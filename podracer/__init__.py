"""The core both runtimes and the algorithms stand on (Podracer: Hessel et al. 2021 name the
two architectures, Sebulba and Anakin): the agent contract, the batch description agents are
built for, the registry helper, config sections' reading and rules, checkpoints, logging,
signals, multi-host, the non-finite guard, the per-update bookkeeping, periodic evaluation and
run results. It imports no runtime (sebulba, anakin), no algorithm (agents) and no network."""
