"""What an actor thread ships (sebulba/actor.py), under asynchronous parameter updates:

- every rollout is made by one parameter version, the one its message is labelled with (the
  learner computes the policy lag from it), with one pool or two half-pools, whether the
  queue has room (the next rollout starts on the newest parameters before the put) or is full
  (the actor puts first, then fetches fresher parameters);
- a message is complete before it is queued: the learner reads it at once, so nothing of it may
  change after the put (its queue wait rides on the next message);
- threads on one device compile each policy shape once: an odd pool's two half-pools have two
  shapes, and both first calls run under the first-call lock.
"""
from __future__ import annotations

import copy
import queue
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import SingleDeviceSharding

from podracer.agent import Agent
from sebulba import actor_policy
from sebulba.actor import ActorThread
from sebulba.pipeline import Lifetime, ParamsSource
from tests.helpers import first_rollouts, run_actor
from tests.fakes.clock_env import ClockEnv

T, N = 4, 6


def _version_agent() -> Agent:
    """Its extras record, at every step, the version of the parameters that acted."""
    def actor_step(params, obs, key):
        b = obs.shape[0]
        return (obs[:, 0].astype(jnp.int32) % 3,
                {"logp": jnp.zeros(b), "version": jnp.full(b, params["version"])})
    return Agent(init=None, actor_params=lambda s: s, actor_step=actor_step,
                 learn_step=lambda *a: None)


class _RecordingQueue(queue.Queue):
    """The actor's queue: records what `full()` answered, and each message's timings as they
    were when it was put."""

    def __init__(self, maxsize: int) -> None:
        super().__init__(maxsize)
        self.answers: list[bool] = []
        self.at_put: list[dict] = []

    def full(self) -> bool:
        answer = super().full()
        self.answers.append(answer)
        return answer

    def put(self, item, block=True, timeout=None):
        super().put(item, block, timeout)
        self.at_put.append(copy.deepcopy(item.timings))


@pytest.mark.parametrize("overlap", ["off", "on"])
@pytest.mark.parametrize("queue_full", [False, True], ids=["room", "full"])
def test_each_rollout_carries_the_version_that_made_it(overlap, queue_full):
    q = _RecordingQueue(maxsize=1 if queue_full else 64)

    def on_message(k, message, params):
        # A new version after every message, published while the actor works on the next.
        params.publish({"version": jnp.int32(k + 1)}, k + 1)
        if queue_full:
            time.sleep(0.3)  # the learner is behind: the actor finds its queue full

    def env(n, seed):  # 20 ms a step: the consumer publishes well before the actor is done
        return ClockEnv(n, seed, step_s=0.02)

    msgs, actor = run_actor(N, {"version": jnp.int32(0)}, out_queue=q, on_message=on_message,
                            agent=_version_agent(), make_env=lambda s: env(6, s),
                            make_env_sized=env, seed=1, unroll_length=T, overlap=overlap,
                            learner_sharding=SingleDeviceSharding(jax.devices()[0]))
    assert actor.overlapping == (overlap == "on")
    for m in msgs:
        made_by = np.unique(np.asarray(m.rollout.extras["version"]))
        assert made_by.tolist() == [m.param_version], (m.param_version, made_by)
    versions = [m.param_version for m in msgs]
    assert versions == sorted(versions) and versions[-1] >= 1  # new versions were picked up
    if overlap == "on":  # the branch each case is about really ran
        assert any(q.answers) == queue_full and not all(q.answers)


def test_a_message_does_not_change_after_it_is_queued():
    q = _RecordingQueue(maxsize=64)
    msgs, _ = run_actor(N, {"version": jnp.int32(0)}, out_queue=q, agent=_version_agent(),
                        make_env=lambda s: ClockEnv(4, s), seed=1, unroll_length=T,
                        learner_sharding=SingleDeviceSharding(jax.devices()[0]))
    assert [m.timings for m in msgs] == q.at_put[:N]
    assert all("actor/queue_put_s" in m.timings for m in msgs)
    assert msgs[0].timings["actor/queue_put_s"] == 0.0  # the first has no earlier put


def test_an_odd_pools_two_half_shapes_compile_once_per_device():
    """Two threads of 5 envs, overlapped: half-pools of 3 and 2 envs. A stand-in policy that
    takes a second on the first call of each shape (a compile) records how many threads ran
    that first call at once: one, for both shapes."""
    agent = _version_agent()
    real = actor_policy.policy_fn(agent)
    done, lock = set(), threading.Lock()
    in_flight: dict[tuple, int] = {}
    most: dict[tuple, int] = {}

    def policy(params, obs, key, state=None, reset=None):
        shape = tuple(np.shape(obs))
        with lock:
            first = shape not in done
            if first:
                in_flight[shape] = in_flight.get(shape, 0) + 1
                most[shape] = max(most.get(shape, 0), in_flight[shape])
        if first:
            time.sleep(1.0)
        out = real(params, obs, key, state, reset)
        if first:
            with lock:
                in_flight[shape] -= 1
                done.add(shape)
        return out

    device = jax.devices()[0]
    lifetime = Lifetime()
    source = ParamsSource([device], lifetime)
    source.publish({"version": jnp.int32(0)}, 0)
    queues = [queue.Queue(maxsize=8) for _ in range(2)]
    actors = [ActorThread(actor_id=i, device=device, agent=agent,
                          make_env=lambda s: ClockEnv(5, s), make_env_sized=ClockEnv,
                          num_envs=5, seed=10 * i, unroll_length=2, params=source,
                          out_queue=q, learner_sharding=SingleDeviceSharding(device),
                          lifetime=lifetime, overlap="on", policy=policy)
              for i, q in enumerate(queues)]
    first_rollouts(actors, queues, lifetime)
    assert {s[0] for s in most} == {3, 2}  # both half shapes were called
    assert set(most.values()) == {1}, most
