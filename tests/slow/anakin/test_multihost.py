"""Anakin multi-host with real processes: 2 local processes x 2 fake CPU devices, one update
spanning all 4 devices over gloo (as tests/slow/sebulba/test_multihost.py does for Sebulba)."""
import os


from tests.helpers import ROOT, read_metrics
from tests.multihost import kill_peer_mid_run, launch_local, read_lines


DRIVER = os.path.join(ROOT, "tests", "programs", "anakin_multihost.py")


def test_two_processes_train_in_lockstep(tmp_path):
    """With paced calls (the default), each process times its own calls. Process 1 lags after
    the first update, so it times the second call short and process 0 long (it waits for
    process 1 inside it); only process 0 checkpoints, and a checkpoint every 7 updates cuts
    its calls there. The call lengths must be process 0's on both, or the calls' collectives
    would not pair up. The hook sees each call's last update."""
    run_dir = tmp_path / "run"
    updates = 20
    proc = launch_local(DRIVER, [
        "--config=experiments/configs/ppo_gymnax.py", "--config.learner_device_ids=(0,1)",
        "--config.num_envs=16", "--config.unroll_length=16", "--config.agent.num_minibatches=2",
        f"--config.total_env_steps={updates * 512}", f"--config.run_dir={run_dir}",
        "--config.checkpoint_keep=1", "--config.checkpoint_every_updates=7",
        "--config.call_target_s=2.0"], timeout=300,
        env=dict(os.environ, ANAKIN_TEST_LAG_S="2.5"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    p0, p1 = (read_lines(run_dir, f"checksums-p{rank}.txt") for rank in (0, 1))
    assert p0 == p1  # bit-identical parameters after every call, at the same updates
    calls = [[int(x) for x in line.split()[:2]] for line in p0]
    assert calls[:2] == [[1, 512], [2, 1024]] and calls[-1] == [updates, updates * 512]
    # Global counter: 2 processes x 16 envs x 16 steps per update, counted once.
    assert all(steps == 512 * update for update, steps in calls)
    assert len(calls) < updates  # the calls after the lag ran several updates each
    assert [7, 7 * 512] in calls and [14, 14 * 512] in calls  # cut at process 0's checkpoints
    # Each process steps its own env streams.
    assert read_lines(run_dir, "first-obs-p0.txt") != read_lines(run_dir, "first-obs-p1.txt")
    lines = read_metrics(run_dir)  # process 0 only
    assert [line["step"] for line in lines] == [512 * (i + 1) for i in range(updates)]
    assert lines[-1]["episode/return_mean"] > lines[0]["episode/return_mean"]
    assert (run_dir / "checkpoints" / str(updates)).is_dir()


def test_dead_peer_ends_the_other_process(tmp_path):
    """Kill process 1 mid-run: process 0 exits promptly with one message naming the lost
    process and a plain non-zero status (no traceback, no abort at exit), as Sebulba does.

    One device per process, as tests/slow/sebulba/test_multihost.py: with two local devices per
    process in the mesh the failed gloo collective was not reported before the heartbeat
    timeout, and the coordination service aborted the survivor (SIGABRT) instead."""
    _, error = kill_peer_mid_run(DRIVER, [
        "--config=experiments/configs/ppo_gymnax.py", "--config.learner_device_ids=(0,)",
        "--config.num_envs=16", "--config.unroll_length=16",
        "--config.agent.num_minibatches=2"], tmp_path / "run", port=30000 + os.getpid() % 1000)
    assert "Newest checkpoint: " in error
