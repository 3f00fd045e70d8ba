"""Python envs stepped in worker processes (`env.workers`, sebulba/env_workers.py).

- Same trajectories: a registered gymnasium env (dict observation, info keys only some envs
  report, terminations and truncations) and a "gymnasium:" id give, with 1..3 workers and an
  uneven split, exactly the observations, rewards, flags and info of the actor's own process.
- The actor's half-pool overlap runs on it and gives the one-pool rollouts.
- Faults name the env and the worker: a worker that raises (stepping or building; in a run,
  after the pool's restarts), a worker killed mid-run; a maker that cannot reach a worker, an
  EnvPool id.
- Shutdown: `close` ends every worker; Ctrl-C to the trainer's process group, SIGTERM to the
  trainer and a killed trainer leave no process behind (the first two with their checkpoint
  saved).
"""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from experiments import train
from sebulba import envs, registry
from sebulba.env_guard import CheckedEnv, EnvFault
from sebulba.env_workers import EnvWorkerError, ProcessEnvBatch, split
from tests.fakes import python_envs
from tests.fakes.clock_env import ClockEnv
from tests.helpers import ROOT, restore_run, wait_until_training

ROVER = envs.EnvConfig(name=python_envs.ENV_NAME, episode_metrics="")


def _play(cfg: envs.EnvConfig, num_envs: int, steps: int, seed: int = 5,
          actions: int = 3) -> list:
    env = envs.make_env(cfg, num_envs, seed)
    rng = np.random.default_rng(0)
    try:
        out = [env.reset()]
        for _ in range(steps):
            ts = env.step(rng.integers(0, actions, num_envs))
            out.append(ts)
    finally:
        env.close()
    return out


def _assert_same_play(a: list, b: list) -> None:
    jax.tree.map(np.testing.assert_array_equal, a[0], b[0])
    for x, y in zip(a[1:], b[1:], strict=True):
        jax.tree.map(np.testing.assert_array_equal, x.obs, y.obs)
        for field in ("reward", "terminated", "truncated", "episode_over"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
        assert sorted(x.info) == sorted(y.info)
        for key in x.info:
            np.testing.assert_array_equal(x.info[key], y.info[key], err_msg=key)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_give_the_in_process_trajectories(workers):
    base = _play(ROVER, 5, 60)
    play = _play(dataclasses.replace(ROVER, workers=workers), 5, 60)
    _assert_same_play(base, play)
    # What was compared: crashes and time limits, each with its reset step after it, and an
    # info key reported by some envs only.
    steps = base[1:]
    assert any(ts.terminated.any() for ts in steps) and any(ts.truncated.any() for ts in steps)
    some = [ts.info["_impact"] for ts in steps if "_impact" in ts.info]
    assert some and any(not m.all() for m in some) and len(some) < len(steps)
    assert base[0]["position"].dtype == np.float32  # the adapter's cast, in the worker too


def test_gymnasium_id_in_workers_keeps_its_options():
    cfg = envs.EnvConfig(name="gymnasium:CartPole-v1", options={"max_episode_steps": 9})
    base = _play(cfg, 4, 40, actions=2)
    _assert_same_play(base, _play(dataclasses.replace(cfg, workers=2), 4, 40, actions=2))
    assert sum(ts.truncated.sum() for ts in base[1:]) > 0  # the option reached the workers


def test_split_and_the_batch_attributes():
    assert split(5, 3) == [(0, 2), (2, 4), (4, 5)]
    assert split(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    env = envs.make_env(dataclasses.replace(ROVER, workers=8), 3, 0)
    try:
        assert env.workers == 3 and env.num_envs == 3  # never more workers than envs
        assert env.action_space.n == 3 and set(env.observation_space) == {"position", "frame"}
        assert len(set(env.pids)) == 3 and os.getpid() not in env.pids
    finally:
        env.close()


@pytest.mark.parametrize("num_envs", [6, 5])
def test_half_pool_overlap_runs_on_workers(num_envs):
    """The actor's two half-pools, each in workers (native send/recv), produce the rollouts
    of one in-process pool (the agent is a function of the observation only)."""
    import jax.numpy as jnp
    from podracer.agent import Agent
    from sebulba.actor import ActorThread
    from sebulba.pipeline import Lifetime, ParamsSource
    import queue

    def actor_step(params, obs, key, state=None):
        action = (obs[:, 0] + obs[:, 1] + obs[:, 2]).astype(jnp.int32) % 3
        return action, {"v": obs[:, 1] * params["w"]}

    agent = Agent(init=None, actor_params=lambda s: s, actor_step=actor_step,
                  learn_step=lambda *a: None)

    def rollouts(sized, overlap):
        lifetime, out = Lifetime(), queue.Queue(maxsize=5)
        source = ParamsSource([jax.devices()[0]], lifetime)
        source.publish({"w": jnp.float32(0.5)}, 0)
        actor = ActorThread(actor_id=0, device=jax.devices()[0], params=source, out_queue=out,
                            lifetime=lifetime, agent=agent,
                            make_env=lambda s: sized(num_envs, s), seed=11, unroll_length=7,
                            learner_sharding=jax.sharding.SingleDeviceSharding(
                                jax.devices()[0]),
                            make_env_sized=sized, overlap=overlap, num_envs=num_envs)
        actor.start()
        try:
            got = [jax.device_get(out.get(timeout=120).rollout) for _ in range(3)]
        finally:
            lifetime.stop()
            actor.join(timeout=30)
        lifetime.raise_if_failed()
        return got, actor.overlapping

    base, _ = rollouts(ClockEnv, "off")
    over, overlapping = rollouts(lambda n, s: ProcessEnvBatch(ClockEnv, n, s, 2), "on")
    assert overlapping is True
    for ra, rb in zip(base, over, strict=True):
        jax.tree.map(np.testing.assert_array_equal, ra, rb)
    assert not np.all(np.concatenate([r.valid for r in over]))  # episodes ended


def test_a_worker_that_raises_is_named():
    cfg = dataclasses.replace(ROVER, workers=2, options={"raise_at": 3})
    env = CheckedEnv(envs.make_env(cfg, 4, 0), "actor-0")
    try:
        env.reset()
        env.step(np.zeros(4, np.int64))
        env.step(np.zeros(4, np.int64))
        with pytest.raises(EnvFault) as info:
            env.step(np.zeros(4, np.int64))
    finally:
        env.close()
    text = str(info.value)
    assert "actor-0: env.step() raised at step 3" in text
    assert f"env '{python_envs.ENV_NAME}': worker 0 of 2 (envs 0..1, pid " in text
    assert "RuntimeError: rover lost its wheels at step 3" in text  # the worker's traceback
    assert "Traceback" in text


def test_a_worker_killed_mid_run_is_named():
    env = envs.make_env(dataclasses.replace(ROVER, workers=2), 4, 0)
    try:
        env.reset()
        env.step(np.zeros(4, np.int64))
        os.kill(env.pids[1], signal.SIGKILL)
        start = time.time()
        with pytest.raises(EnvWorkerError, match=(
                rf"env '{python_envs.ENV_NAME}': worker 1 of 2 \(envs 2..3, pid \d+\) died "
                r"while stepping: the process was killed by signal 9")):
            env.step(np.zeros(4, np.int64))
        assert time.time() - start < 10
    finally:
        env.close()


def test_a_worker_that_exits_is_named():
    env = envs.make_env(dataclasses.replace(ROVER, workers=2, options={"exit_at": 2}), 4, 0)
    try:
        env.reset()
        env.step(np.zeros(4, np.int64))
        with pytest.raises(EnvWorkerError, match=r"worker 0 of 2 .* exited with code 3"):
            env.step(np.zeros(4, np.int64))
    finally:
        env.close()


def test_a_maker_that_fails_in_the_worker_is_named():
    cfg = dataclasses.replace(ROVER, workers=2, options={"no_such_option": 1})
    with pytest.raises(EnvWorkerError, match=(r"(?s)worker 0 of 2 .* raised while building "
                                              r"its envs:\n.*unexpected keyword argument")):
        envs.make_env(cfg, 4, 0)


def test_makers_workers_cannot_import_and_envpool_ids_are_refused():
    registry.register_env("Lambda-test-v0",
                          lambda n, seed, cfg: python_envs.make_rover(n, seed, cfg),
                          overwrite=True)
    try:
        with pytest.raises(ValueError, match=r"not a lambda or a closure"):
            envs.make_env(envs.EnvConfig(name="Lambda-test-v0", workers=2), 2, 0)
    finally:
        registry.unregister_env("Lambda-test-v0")
    with pytest.raises(ValueError, match=r"env.workers=2 steps Python envs .* 'CartPole-v1' "
                                         r"is an EnvPool id"):
        envs.make_env(envs.EnvConfig(name="CartPole-v1", workers=2), 2, 0)
    with pytest.raises(ValueError, match=r"workers=-1 must be >= 0"):
        envs.EnvConfig(name="CartPole-v1", workers=-1)


def test_close_ends_every_worker():
    env = envs.make_env(dataclasses.replace(ROVER, workers=3), 3, 0)
    env.reset()
    pids = env.pids
    env.close()
    env.close()  # twice is harmless
    assert not [p for p in pids if _alive(p)]


def test_training_in_workers_reports_the_env_metrics(impala_classic_config):
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1,),
                                   num_actor_threads=1, num_envs=4, unroll_length=8,
                                   total_env_steps=4 * 8 * 12, checkpoint_keep=0)
    config.env.name = python_envs.ENV_NAME
    config.env.workers = 2
    config.env.episode_metrics = "crashed:max,speed:mean"
    result = train.run(config)
    assert result.updates == 12
    summary = result.episode_summary
    assert summary["episode/count"] > 0
    assert 0.0 < summary["episode/crashed"] < 1.0, summary  # the share of games crashed
    assert summary["episode/speed"] > 0.0, summary


def test_a_raising_worker_stops_the_run_after_its_restarts(impala_classic_config, capsys):
    """runtime.restart_envs_on_error rebuilds the pool, workers and all; a worker that raises
    again (every pool here raises at its envs' step 5) ends the run naming it."""
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1,),
                                   num_actor_threads=1, num_envs=4, unroll_length=8,
                                   total_env_steps=4 * 8 * 50, checkpoint_keep=0,
                                   restart_envs_on_error=True, max_env_restarts=1)
    config.env.name = python_envs.ENV_NAME
    config.env.workers = 2
    config.env.episode_metrics = ""
    config.env.options = {"raise_at": 5}
    with pytest.raises(RuntimeError, match=r"thread 'actor-0' failed") as info:
        train.run(config)
    cause = str(info.value.__cause__)
    assert "worker 0 of 2 (envs 0..1" in cause and "rover lost its wheels" in cause, cause
    assert "Gave up after 1 env restart(s)" in cause, cause
    assert "Rebuilding actor-0's envs (restart 1/1)" in capsys.readouterr().out


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _start_trainer(run_dir) -> tuple[subprocess.Popen, list[str]]:
    cmd = [sys.executable, "experiments/train.py", "--import", "tests.fakes.python_envs",
           "--config=experiments/configs/impala_classic.py",
           f"--config.env.name={python_envs.ENV_NAME}", "--config.env.workers=2",
           "--config.env.episode_metrics=", "--config.num_envs=4",
           "--config.num_actor_threads=1", "--config.total_env_steps=100000000",
           "--config.console_every_s=0", f"--config.run_dir={run_dir}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    return proc, wait_until_training(proc, timeout=120.0)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_the_checkpoint_and_leaves_no_worker(tmp_path, sig):
    """Ctrl-C reaches the whole process group (workers included); SIGTERM (pre-emption) the
    trainer alone."""
    proc, _ = _start_trainer(tmp_path / "run")
    workers = _descendants(proc.pid)
    assert len(workers) >= 2, workers  # the two workers (and multiprocessing's tracker)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else 0), out
    assert "checkpoint: " in out and "Traceback" not in out, out
    assert restore_run(str(tmp_path / "run")).updates > 0
    time.sleep(1.0)
    assert not [p for p in workers if _alive(p)], out


@pytest.mark.slow
def test_a_killed_trainer_leaves_no_worker(tmp_path):
    proc, _ = _start_trainer(tmp_path / "run")
    workers = _descendants(proc.pid)
    assert len(workers) >= 2, workers
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.time() + 15
    while [p for p in workers if _alive(p)] and time.time() < deadline:
        time.sleep(0.2)
    assert not [p for p in workers if _alive(p)]  # they read EOF on their pipes and exit
