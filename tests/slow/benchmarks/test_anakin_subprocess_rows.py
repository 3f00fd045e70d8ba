"""benchmarks/anakin_throughput.py measures a device count the process lacks in a fresh process
with faked CPU devices (a process of its own: ~10 s, most of it imports and compiling)."""
from benchmarks import anakin_throughput


def test_a_device_count_this_process_lacks_runs_in_a_subprocess():
    # The tests' process has 4 faked CPU devices (tests/conftest.py): 6 needs a fresh process.
    # (--set goes along: 6 envs on 6 devices hold 1 each, too few for 4 minibatches.)
    row = anakin_throughput.measure_on(6, num_envs=6, unroll_length=2, seconds=0.2,
                                       sets=("agent.num_minibatches=1",), act_only=True)
    assert row["process"] == "subprocess" and row["devices"] == 6 and row["sps"] > 0, row
