"""The runtimes' drivers, peers over one protocol (protocol.py: `Driver`, `RuntimeSection`,
`Started`): sebulba.py (host env batches, actor threads, the learner) and anakin.py (a JAX env
stepped on the devices, populations of agents in one program). A driver imports the protocol
and the neutral wiring, never the other driver (tests/architecture); sections.DRIVERS maps
`config.runtime` to them."""
