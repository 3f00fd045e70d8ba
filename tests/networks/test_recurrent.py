"""The LSTM core: one unroll over a sequence with resets equals the actor's step-by-step use.

The actor steps the network one observation at a time, resetting the state itself where an
episode starts (podracer.agent.reset_core_state); the learner unrolls the whole rollout from
the stored state with reset flags. Both must give the same outputs and the same final state.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

import networks
from agents import acting, evaluation, unroll
from podracer.agent import reset_core_state

T, B, OBS = 7, 3, 5


def _net(shared=True, space=None):
    dist = networks.from_space(space) if space is not None else None
    return networks.RecurrentActorCritic(torso=networks.MLP((16,)), lstm_size=8,
                                         num_actions=0 if dist else 4, action_dist=dist,
                                         shared_torso=shared)


def _step_by_step(net, params, obs, state, reset):
    """The actor's way: reset the state, then one T=1 call per step."""
    outs = []
    for t in range(obs.shape[0]):
        state = reset_core_state(state, reset[t], net.initial_state(B))
        out, state = acting.step_network(net, params, obs[t], state)
        outs.append(out)
    return jax.tree.map(lambda *x: jnp.stack(x), *outs), state


@pytest.mark.parametrize("shared,space", [
    (True, None), (False, None),
    (True, spaces.Dict({"steer": spaces.Box(-1.0, 1.0, (2,)), "gear": spaces.Discrete(3)}))])
def test_unroll_with_resets_equals_stepping(shared, space):
    net = _net(shared, space)
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.normal(size=(T, B, OBS)), jnp.float32)
    reset = jnp.asarray(rng.random((T, B)) < 0.3).at[0, 1].set(True)
    params = acting.init_params(net, jax.random.key(0), obs[0])
    # A non-zero start state, as carried over from a previous rollout.
    state = jax.tree.map(lambda x: jnp.asarray(rng.normal(size=x.shape), jnp.float32),
                         net.initial_state(B))
    (pi_u, v_u), s_u = net.apply(params, obs, state, reset)
    (pi_s, v_s), s_s = _step_by_step(net, params, obs, state, reset)
    for a, b in zip(jax.tree.leaves((pi_u, v_u, s_u)), jax.tree.leaves((pi_s, v_s, s_s))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # The memory matters: without the resets the outputs differ.
    (_, v_n), _ = net.apply(params, obs, state, jnp.zeros((T, B), bool))
    assert np.abs(np.asarray(v_n) - np.asarray(v_u)).max() > 1e-4


def test_reset_zeroes_the_carried_state():
    """A reset at step 0 makes the unroll independent of the incoming state."""
    net = _net()
    obs = jnp.ones((T, B, OBS))
    params = acting.init_params(net, jax.random.key(1), obs[0])
    reset = jnp.zeros((T, B), bool).at[0].set(True)
    junk = jax.tree.map(lambda x: x + 3.0, net.initial_state(B))
    (_, v1), s1 = net.apply(params, obs, junk, reset)
    (_, v0), s0 = net.apply(params, obs, net.initial_state(B), reset)
    np.testing.assert_allclose(v1, v0, rtol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), s1, s0)


def test_learner_resets_follow_the_reset_steps():
    """reset[t] = not valid[t-1]; step 0 starts from the stored (already reset) state."""
    valid = jnp.asarray([[1, 1], [0, 1], [1, 0], [1, 1]], bool)
    np.testing.assert_array_equal(unroll.core_resets(valid, 5),
                                  [[0, 0], [0, 0], [1, 0], [0, 1], [0, 0]])
    np.testing.assert_array_equal(unroll.core_resets(valid, 4), unroll.core_resets(valid, 5)[:4])


def test_greedy_step_is_the_mode_and_carries_the_state():
    net = _net()
    obs = jnp.asarray(np.random.default_rng(2).normal(size=(B, OBS)), jnp.float32)
    params = acting.init_params(net, jax.random.key(2), obs)
    ap = acting.ActorParams(params, None)
    first = jnp.ones(B, bool)
    action, state = evaluation.greedy_step(net, ap, obs, net.initial_state(B), first)
    (pi, _), expected = acting.step_network(net, params, obs, net.initial_state(B))
    np.testing.assert_array_equal(action, jnp.argmax(pi, -1))
    jax.tree.map(np.testing.assert_allclose, state, expected)
    ff = networks.ActorCritic(torso=networks.MLP((16,)), num_actions=4)
    p_ff = acting.init_params(ff, jax.random.key(0), obs)
    a_ff, s_ff = evaluation.greedy_step(ff, acting.ActorParams(p_ff, None), obs, None, None)
    assert s_ff is None and a_ff.shape == (B,)


def test_greedy_actor_resets_like_the_training_actor():
    """greedy_actor (for scripts) resets on the first step and on the step after a reset step
    (done at t -> reset step t+1 -> new episode at t+2), as sebulba/actor.py does."""
    net = _net()
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(4, B, OBS)), jnp.float32)
    params = acting.init_params(net, jax.random.key(3), obs[0])
    ap = acting.ActorParams(params, None)
    done = np.zeros((4, B), bool)
    done[0, 0] = True  # env 0: step 1 is a reset step, step 2 starts a new episode
    actor = evaluation.greedy_actor(net, ap, B)
    state = net.initial_state(B)
    for t, reset in enumerate([[1, 1, 1], [0, 0, 0], [1, 0, 0], [0, 0, 0]]):
        action = actor.act(obs[t], jax.random.key(t))
        a, state = evaluation.greedy_step(net, ap, obs[t], state, jnp.asarray(reset, bool))
        np.testing.assert_array_equal(action, a)
        actor.observe(done[t], np.zeros(B, bool))
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6), actor._state, state)
