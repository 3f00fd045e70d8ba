"""The actors' jitted policy step, shared by all actor threads of an agent (`policy_fn`), and
the lock that makes threads on the same device compile it once, not once each.

One call is the whole inference of a (half-)pool step: the observation goes in as the host
array and the policy returns it on the device for the rollout, so there is no separate
device_put; recurrent agents' core states are reset in the same call where a new episode
starts.
"""
from __future__ import annotations

import functools
import threading
from typing import Callable

import jax

from podracer.agent import Agent, reset_core_state


def _policy_step(agent: Agent, params, obs, key, state=None, reset=None):
    """One batched policy call. Returns (action, extras, key, state used, state after the
    step, obs): `obs` arrives as a host array and goes back as the device copy the rollout
    keeps. Recurrent agents: resets the state of the envs whose episode starts here."""
    key, sub = jax.random.split(key)
    if state is None:
        action, extras = agent.actor_step(params, obs, sub)
        return action, extras, key, None, None, obs
    state = reset_core_state(state, reset, agent.initial_core_state(reset.shape[0]))
    action, extras, new_state = agent.actor_step(params, obs, sub, state)
    return action, extras, key, state, new_state, obs


@functools.lru_cache(maxsize=64)
def policy_fn(agent: Agent) -> Callable:
    """The jitted policy step of `agent`, one per agent for the whole process: every actor
    thread of a run calls the same function, so jax compiles it once per device and shape
    (each thread wrapping its own bound method compiled the same policy again)."""
    return jax.jit(functools.partial(_policy_step, agent))


# Threads on one device that call the policy for the first time at once would each compile
# it (jax's compilation cache does not make concurrent misses wait): the first call of a
# (policy, device) pair runs under this lock, the others then find it compiled.
_FIRST_CALL: dict[tuple, threading.Lock] = {}
_FIRST_CALL_LOCK = threading.Lock()


def first_call_lock(policy: Callable, device: jax.Device) -> threading.Lock:
    with _FIRST_CALL_LOCK:
        return _FIRST_CALL.setdefault((id(policy), device.id), threading.Lock())


_CALLED: set[tuple] = set()


def claim_first_call(policy: Callable, device: jax.Device) -> bool:
    """True for the one thread that calls `policy` on `device` first (it compiles it)."""
    with _FIRST_CALL_LOCK:
        key = (id(policy), device.id)
        first = key not in _CALLED
        _CALLED.add(key)
        return first
