"""The overlapped actor loop (two half-pools stepped in turn, sebulba/actor.py).

- Equivalence: on deterministic envs and a deterministic policy (feed-forward and recurrent,
  even and odd env counts, EnvPool CartPole and a step-only Python env), the overlapped loop
  produces exactly the rollouts, episode statistics and core states of the one-pool loop.
- "auto" overlaps EnvPool pools (native send/recv) and leaves step-only envs synchronous.
- Behaviour: with an env step and a policy call that sleep (releasing the GIL), the one-pool
  loop alternates them and the overlapped loop runs one half's env step during the other
  half's policy call (counted from their recorded intervals, not timed).
- All actor threads of an agent share one jitted policy: it is traced once, not per thread.

The half-pools step in lockstep (batch_size == num_envs), so no env comes back out of order;
envs that would (EnvPool's batch_size < num_envs) are not used by the runtime.
"""
from __future__ import annotations

import queue
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import SingleDeviceSharding

from sebulba import actor_policy, actor_pools
from sebulba.actor import ActorThread
from podracer.agent import Agent
from sebulba.envs import EnvConfig, make_env
from sebulba.pipeline import Lifetime, ParamsSource
from tests.helpers import first_rollouts, run_actor
from tests.fakes.clock_env import ClockEnv


def _clock_agent(recurrent: bool) -> Agent:
    """Actions and extras are functions of the observation (and the core state), never of
    the key: the two loops draw different keys, so only then can their rollouts be equal."""

    def actor_step(params, obs, key, state=None):
        if state is None:
            action = (obs[:, 0] + obs[:, 1] + obs[:, 2]).astype(jnp.int32) % 3
            return action, {"v": obs[:, 1] * params["w"]}
        h = state["h"] + obs[:, 1:3]  # memory of this episode's steps, reset per episode
        action = (h[:, 0] + obs[:, 0]).astype(jnp.int32) % 3
        return action, {"v": h[:, 0] * params["w"]}, {"h": h}

    return Agent(init=lambda key, obs: {"w": jnp.float32(0.5)}, actor_params=lambda s: s,
                 actor_step=actor_step, learn_step=lambda *a: None,
                 initial_core_state=(lambda n: {"h": jnp.zeros((n, 2))}) if recurrent
                 else None)


def _run(agent, make_env_sized, num_envs, overlap, T, n_rollouts, seed=11, timeout=120,
         synchronous=False):
    """Starts an ActorThread, returns (rollouts on the host, messages, arrival times, thread).
    `synchronous`: an on-policy actor; a new parameter version follows each rollout."""
    arrivals = []

    def on_message(k, message, params):
        arrivals.append(time.perf_counter())
        if synchronous:
            params.publish({"w": jnp.float32(0.5 + k + 1)}, k + 1)

    msgs, actor = run_actor(n_rollouts, {"w": jnp.float32(0.5)}, queue_size=n_rollouts + 2,
                            timeout=timeout, on_message=on_message, agent=agent,
                            make_env=lambda s: make_env_sized(num_envs, s), seed=seed,
                            unroll_length=T,
                            learner_sharding=SingleDeviceSharding(jax.devices()[0]),
                            make_env_sized=make_env_sized, overlap=overlap,
                            num_envs=num_envs, synchronous=synchronous)
    return [jax.device_get(m.rollout) for m in msgs], msgs, arrivals, actor


def _assert_same(a, b):
    for ra, rb in zip(a, b, strict=True):
        jax.tree.map(np.testing.assert_array_equal, ra, rb)


@pytest.mark.parametrize("recurrent", [False, True], ids=["feedforward", "lstm_like"])
@pytest.mark.parametrize("num_envs", [6, 5])
def test_overlap_gives_the_one_pool_rollouts(recurrent, num_envs):
    agent = _clock_agent(recurrent)
    sync = _run(agent, ClockEnv, num_envs, "off", T=7, n_rollouts=4)
    over = _run(agent, ClockEnv, num_envs, "on", T=7, n_rollouts=4)
    assert sync[3].overlapping is False and over[3].overlapping is True
    rs, ro = sync[0], over[0]
    assert ro[0].obs.shape == (8, num_envs, 4) and ro[0].reward.shape == (7, num_envs)
    _assert_same(rs, ro)
    # The env axis is the thread's envs in order (seed + i), halves concatenated.
    np.testing.assert_array_equal(ro[0].obs[0, :, 0], 11 + np.arange(num_envs))
    # Reset steps, both kinds of episode end and several episodes per env occurred.
    v = np.concatenate([r.valid for r in ro])
    assert (~v).sum() >= num_envs and any(r.terminated.any() for r in ro)
    assert any(r.truncated.any() for r in ro)
    for ms, mo in zip(sync[1], over[1]):
        assert sorted(ms.episodes) == sorted(mo.episodes) and ms.episodes
        assert mo.env_steps == 7 * num_envs
    if recurrent:  # memory carried over rollouts, reset per env at episode starts
        assert np.abs(ro[2].core_state["h"]).max() > 0


@pytest.mark.parametrize("recurrent", [False, True], ids=["feedforward", "lstm_like"])
def test_overlap_on_envpool_keeps_seeds_and_rollouts(recurrent):
    """EnvPool CartPole: half-pools seeded seed and seed + n_A step exactly as the one pool."""
    cfg = EnvConfig(name="CartPole-v1", num_threads=2)

    def sized(n, seed):
        return make_env(cfg, n, seed)

    def actor_step(params, obs, key, state=None):
        action = (obs[:, 2] < 0).astype(jnp.int32)  # pushes the pole over: short games
        if state is None:
            return action, {"v": obs.sum(-1) * params["w"]}
        h = state["h"] + obs[:, :2]
        return action, {"v": h[:, 0] * params["w"]}, {"h": h}

    agent = Agent(init=None, actor_params=lambda s: s, actor_step=actor_step,
                  learn_step=lambda *a: None,
                  initial_core_state=(lambda n: {"h": jnp.zeros((n, 2))}) if recurrent
                  else None)
    sync = _run(agent, sized, 8, "off", T=16, n_rollouts=3)
    over = _run(agent, sized, 8, "on", T=16, n_rollouts=3)
    assert over[3].overlapping is True
    assert not np.all(np.concatenate([r.valid for r in over[0]]))  # episodes ended
    _assert_same(sync[0], over[0])


@pytest.mark.parametrize("recurrent", [False, True], ids=["feedforward", "lstm_like"])
def test_synchronous_overlap_waits_for_each_update(recurrent):
    """On-policy actors drain both half-pools, ship, then wait for the update the rollout
    feeds: rollout k is made with parameters version k only, as with one pool."""
    agent = _clock_agent(recurrent)
    sync = _run(agent, ClockEnv, 6, "off", T=5, n_rollouts=3, synchronous=True)
    over = _run(agent, ClockEnv, 6, "on", T=5, n_rollouts=3, synchronous=True)
    assert [m.param_version for m in over[1]] == [0, 1, 2]
    if not recurrent:  # extras v = obs[:, 1] x w, with w = 0.5 + version at every step
        for k, r in enumerate(over[0]):
            np.testing.assert_allclose(r.extras["v"], r.obs[:-1, :, 1] * (0.5 + k))
    _assert_same(sync[0], over[0])


def test_auto_overlaps_envpool_on_accelerators_only():
    pool = make_env(EnvConfig(name="CartPole-v1"), 2, 0)
    try:
        assert actor_pools.wants_overlap("auto", pool, "gpu")
        assert actor_pools.wants_overlap("auto", pool, "tpu")
        assert not actor_pools.wants_overlap("auto", pool, "cpu")  # measured slower on CPU
        # A step-only env (a user env, a gymnasium adapter) would step in the actor's thread.
        assert not actor_pools.wants_overlap("auto", ClockEnv(2, 0), "gpu")
        assert actor_pools.wants_overlap("on", ClockEnv(2, 0), "cpu")
        assert not actor_pools.wants_overlap("off", pool, "gpu")
    finally:
        pool.close()
    _, _, _, a = _run(_clock_agent(False), ClockEnv, 4, "auto", T=3, n_rollouts=1)
    assert a.overlapping is False


def test_overlap_refuses_bad_settings():
    kw = dict(actor_id=0, device=jax.devices()[0], agent=_clock_agent(False),
              make_env=lambda s: ClockEnv(4, s), seed=0, unroll_length=2,
              params=None, out_queue=None, learner_sharding=None, lifetime=Lifetime())
    with pytest.raises(ValueError, match="overlap='sometimes'; allowed: auto, on, off"):
        ActorThread(overlap="sometimes", **kw)
    with pytest.raises(ValueError, match="overlap='on' needs make_env_sized"):
        ActorThread(overlap="on", **kw)


def _sleepy_agent(policy_s: float, num_envs: int, spans: list | None = None) -> Agent:
    """A policy whose call sleeps policy_s x (its share of the thread's envs) on the host,
    recording each call's [start, end) in `spans`."""

    def sleep_then_act(obs):
        start = time.perf_counter()
        time.sleep(policy_s * obs.shape[0] / num_envs)
        if spans is not None:
            spans.append((start, time.perf_counter()))
        return np.zeros(obs.shape[0], np.int32)

    def actor_step(params, obs, key):
        action = jax.pure_callback(sleep_then_act,
                                   jax.ShapeDtypeStruct(obs.shape[:1], jnp.int32), obs)
        return action, {"v": obs[:, 0] * params["w"]}

    return Agent(init=None, actor_params=lambda s: s, actor_step=actor_step,
                 learn_step=lambda *a: None)


@pytest.mark.parametrize("env_ms,policy_ms", [(40, 25), (25, 40)])
def test_overlapped_env_steps_run_during_policy_calls(env_ms, policy_ms):
    """Behaviour, not speed, counted rather than timed: every env step and every policy call
    records its [start, end) interval (sleeps that release the GIL, as EnvPool does). With one
    pool they alternate, so no env step overlaps a policy call; with two half-pools, one
    half's step runs while the other half's policy runs, so (nearly) every step overlaps one.
    The speed this buys is measured by benchmarks/throughput.py (docs/benchmarks.md)."""
    n, T, k = 8, 6, 4
    lock = threading.Lock()
    for mode in ("off", "on"):
        env_spans, policy_spans = [], []

        def sized(m, seed):
            return ClockEnv(m, seed, step_s=env_ms / 1e3 * m / n, lock=lock, spans=env_spans)

        agent = _sleepy_agent(policy_ms / 1e3, n, spans=policy_spans)
        _run(agent, sized, n, mode, T=T, n_rollouts=k)
        overlapping = sum(any(a < d and c < b for c, d in policy_spans) for a, b in env_spans)
        if mode == "off":
            assert overlapping == 0, (overlapping, len(env_spans))
        else:
            assert overlapping >= 0.8 * len(env_spans), (overlapping, len(env_spans))


def test_actor_threads_share_one_compiled_policy():
    traces = []

    def actor_step(params, obs, key):
        traces.append(obs.shape)  # runs once per trace (compile), not per call
        return obs[:, 0].astype(jnp.int32) % 3, {"v": obs[:, 1] * params["w"]}

    agent = Agent(init=None, actor_params=lambda s: s, actor_step=actor_step,
                  learn_step=lambda *a: None)
    device = jax.devices()[0]
    lifetime = Lifetime()
    params = ParamsSource([device], lifetime)
    params.publish({"w": jnp.float32(0.5)}, 0)
    queues = [queue.Queue(maxsize=4) for _ in range(3)]
    actors = [ActorThread(actor_id=i, device=device, agent=agent,
                          make_env=lambda s: ClockEnv(4, s), seed=100 * i, unroll_length=3,
                          params=params, out_queue=q, learner_sharding=SingleDeviceSharding(
                              device), lifetime=lifetime, overlap="off")
              for i, q in enumerate(queues)]
    assert actors[0]._policy is actors[1]._policy is actor_policy.policy_fn(agent)
    first_rollouts(actors, queues, lifetime)
    assert traces == [(4, 4)], traces  # 3 threads, one device, one shape: one trace


def test_runtime_trains_with_overlapped_actors(impala_classic_config):
    """The runner hands RuntimeConfig.actor_overlap and the sized env factory to its actors:
    a CartPole run with half-pools counts every step and episode."""
    from experiments import impala_atari
    config = impala_classic_config(num_actor_threads=2, num_envs=12, unroll_length=8,
                                   total_env_steps=12 * 8 * 12, actor_overlap="on")
    result = impala_atari.run(config)
    assert result.updates == 12 and result.env_steps == 12 * 96
    assert result.last_metrics["episode/count"] > 0
    assert np.isfinite(result.last_metrics["loss/total"])


@pytest.mark.parametrize("overlap,num_envs,match", [
    ("maybe", 4, r"actor_overlap='maybe' must be 'auto', 'on' or 'off'"),
    ("on", 2, r"actor_overlap='on' needs >= 2 envs per actor thread \(two half-pools\); "
              r"num_envs=2 over 2 thread\(s\) x 1 actor device\(s\) gives 1")])
def test_runtime_config_checks_actor_overlap(overlap, num_envs, match):
    from sebulba.runtime_config import RuntimeConfig
    with pytest.raises(ValueError, match=match):
        RuntimeConfig(actor_overlap=overlap, num_envs=num_envs, num_actor_threads=2)


def test_default_send_recv_keeps_the_env_checks():
    """A step-only env stepped by CheckedEnv's helper thread: results come back in order,
    and an exception or a NaN observation in the thread is an EnvFault naming the step."""
    from sebulba.env_guard import CheckedEnv, EnvFault

    class Flaky(ClockEnv):
        def step(self, action):
            ts = super().step(action)
            if self.k.max() == 0 and self.t.max() == 2:
                raise RuntimeError("simulator crashed")
            return ts

    env = CheckedEnv(ClockEnv(3, 2), "actor-0[B]")  # games of 4-6 steps
    env.reset()
    for t in range(1, 4):
        env.send(np.zeros(3, np.int32))
        np.testing.assert_array_equal(env.recv().obs[:, 1], t)
    with pytest.raises(RuntimeError, match="recv\\(\\) without a send\\(\\)"):
        env._worker.recv()
    flaky = CheckedEnv(Flaky(3, 0), "actor-0[A]")
    flaky.reset()
    flaky.send(np.zeros(3, np.int32))
    flaky.recv()
    flaky.send(np.zeros(3, np.int32))
    with pytest.raises(EnvFault, match=r"actor-0\[A\]: env.step\(\) raised at step 2 of its "
                                       r"pool: RuntimeError\('simulator crashed'\)"):
        flaky.recv()

    class NaNObs(ClockEnv):
        def step(self, action):
            ts = super().step(action)
            return ts._replace(obs=np.full_like(ts.obs, np.nan))

    bad = CheckedEnv(NaNObs(2, 0), "actor-3[B]")
    bad.reset()
    bad.send(np.zeros(2, np.int32))
    with pytest.raises(EnvFault, match=r"actor-3\[B\]: non-finite observation from env\(s\) "
                                       r"\[0, 1\]"):
        bad.recv()
    for e in (env, flaky, bad):
        e.close()
