"""podracer.distributed's host exchange: what varies between processes by timing (finished
games, the length of Anakin's next call) crosses processes as fixed-size host data, in a
program that has finished on every local device before the loop sends its next update."""

import numpy as np

from podracer import distributed


def test_one_process_exchange_is_its_own_data():
    local = np.arange(6, dtype=np.float32).reshape(2, 3)
    every = distributed.allgather_host(local)
    assert every.shape == (1, 2, 3) and np.array_equal(every[0], local)
    assert int(distributed.broadcast_host(np.int32(7))) == 7
