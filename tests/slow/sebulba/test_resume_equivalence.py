"""A run continued with `--config.resume` keeps its result, as far as a result can be kept.

Actors draw fresh environment seeds after a resume by design (EnvPool cannot save emulator
state; docs/checkpoints.md "RNG state" and "Resume equivalence, measured"), so whole-run
curves cannot match exactly. What a resume must keep is pinned here, with the runtime's own
pieces (sebulba/learner.make_learn_fn over a Topology, podracer/checkpoint.Checkpointer and
restore, the horizon rule of experiments.wiring.run: schedules.resumed_horizon of the checkpoint's
metadata) on a fixed sequence of rollouts:

- N updates in one go == N/2 updates, a checkpoint written and restored into a freshly built
  agent, N/2 more: same parameters, optimiser state, update counter, shuffling key and
  normaliser statistics, to float tolerance, for IMPALA and PPO with the learning rate decaying;
- the learning rate at every update is the same in both (the schedule carries across resume).

The run-level twin on CartPole (rates logged by whole runs, split by SIGTERM) is
tests/sebulba/test_schedule_resume.py.
"""
import jax
import numpy as np
import pytest

import agents.impala as impala
import agents.ppo as ppo
from agents import schedules
from podracer import checkpoint
from podracer.agent import Rollout
from sebulba.learner import make_learn_fn, place_learner_state
from sebulba.topology import make_topology
from tests.helpers import IMPALA_640, ACTION_SPACES, episode_ends, small_network


T, B, OBS = 5, 8, 4
N = 6  # updates in all; the split run checkpoints after N // 2
LEARNERS = (0, 1)  # two faked learner devices: the restored state is re-placed on both

AGENTS = {
    # Adam-free RMSProp path of IMPALA with its (tiny) Atari epsilon and clipping, and a rate
    # large enough that the parameters move well beyond float noise.
    "impala": (impala.make_agent, impala.ImpalaConfig(learning_rate=1e-2, lr_decay=True,
                                                      obs_norm=True, **IMPALA_640)),
    # PPO with shuffling on (the key must carry over), V-trace, and normaliser statistics.
    "ppo": (ppo.make_agent, ppo.PPOConfig(learning_rate=1e-2, lr_decay=True, num_epochs=2,
                                          num_minibatches=2, correction="vtrace",
                                          obs_norm=True, reward_scaling=True)),
}


def _build(algo: str, horizon):
    make_agent, cfg = AGENTS[algo]
    return make_agent(small_network(ACTION_SPACES["discrete"]), cfg, horizon, batch_envs=B)


def _rollouts(algo: str) -> list[Rollout]:
    """N rollouts acted by the agent's own actor_step (so extras are what actors send), from
    behaviour parameters that differ per rollout (importance weights differ from 1)."""
    rng = np.random.default_rng(0)
    agent = _build(algo, N)
    out = []
    for i in range(N):
        obs = (2.0 + 3.0 * rng.normal(size=(T + 1, B, OBS))).astype(np.float32)
        behaviour = agent.actor_params(agent.init(jax.random.key(100 + i), obs[0]))
        actions, extras = [], []
        for t in range(T):
            a, ex = agent.actor_step(behaviour, obs[t], jax.random.key(1000 * i + t))
            actions.append(a)
            extras.append(ex)
        terminated, truncated, valid = episode_ends(rng, T, B, 0.15, truncate_prob=0.1)
        out.append(Rollout(obs=obs, action=np.stack(actions),
                           reward=rng.normal(size=(T, B)).astype(np.float32),
                           terminated=terminated, truncated=truncated, valid=valid,
                           extras=jax.tree.map(lambda *x: np.stack(x), *extras)))
    return out


def _train(agent, state, rollouts, topo):
    """Runs one update per rollout as the runtime does; returns (host state, learning rates)."""
    learn = make_learn_fn(agent, topo)
    state = place_learner_state(state, topo)
    rates = []
    for rollout in rollouts:
        state, metrics = learn(state, (jax.device_put(rollout, topo.batch_sharded()),))
        assert float(metrics["nonfinite/skipped"]) == 0.0
        rates.append(float(metrics["optim/learning_rate"]))
    return jax.device_get(state), rates


def _leaves(state):
    """Every leaf as a numpy array (typed PRNG keys as their raw data)."""
    def plain(x):
        if jax.dtypes.issubdtype(getattr(x, "dtype", None), jax.dtypes.prng_key):
            return np.asarray(jax.random.key_data(x))
        return np.asarray(x)
    return jax.tree.leaves(jax.tree.map(plain, state))


@pytest.mark.parametrize("algo", sorted(AGENTS))
def test_split_by_checkpoint_equals_one_go(algo, tmp_path):
    rollouts = _rollouts(algo)
    topo = make_topology((0,), LEARNERS, B)
    obs0 = rollouts[0].obs[0]

    agent = _build(algo, schedules.Horizon(N))
    start = jax.device_get(agent.init(jax.random.key(0), obs0).params)  # (states are donated)
    whole, whole_rates = _train(agent, agent.init(jax.random.key(0), obs0), rollouts, topo)

    # First session: N/2 updates, then the checkpoint experiments.wiring.run writes (with its horizon).
    half = N // 2
    agent = _build(algo, schedules.Horizon(N))
    first, first_rates = _train(agent, agent.init(jax.random.key(0), obs0), rollouts[:half],
                                topo)
    ckpt = checkpoint.Checkpointer(str(tmp_path / "checkpoints"), keep=2, metadata={
        "experiment": algo, "config": {"total_env_steps": N * T * B},
        "lr_horizon": schedules.Horizon(N).to_dict()})
    ckpt.close(checkpoint.Progress(first, half * T * B, half))

    # Second session: a freshly built agent, the horizon rule of experiments.wiring.run, restore, N/2.
    meta = checkpoint.load_metadata(str(tmp_path))
    horizon = schedules.resumed_horizon(schedules.trained_horizon(meta), half, N)
    agent = _build(algo, horizon)
    template = jax.eval_shape(agent.init, jax.random.key(0), obs0)
    progress = checkpoint.restore(str(tmp_path), template, experiment=algo)
    assert (progress.updates, progress.env_steps) == (half, half * T * B)
    split, second_rates = _train(agent, progress.learner_state, rollouts[half:], topo)

    # The schedule: the same rate at every update, and it does decay (lr_decay is on).
    np.testing.assert_allclose(first_rates + second_rates, whole_rates, rtol=1e-7)
    assert whole_rates[0] > whole_rates[-1] > 0
    # The whole learner state (params, optimiser moments and count, update counter, PPO's
    # shuffling key, normaliser statistics) matches; and training moved the parameters.
    assert int(split.update) == int(whole.update) == N
    assert jax.tree.structure(split) == jax.tree.structure(whole)
    for a, b in zip(_leaves(split), _leaves(whole)):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    moved = max(float(np.abs(a - b).max()) for a, b in zip(
        jax.tree.leaves(whole.params), jax.tree.leaves(start)))
    assert moved > 1e-2, moved


def test_a_resume_that_drops_the_optimiser_state_is_caught():
    """The comparison above can fail: restoring only the parameters (fresh RMSProp moments,
    update counter 0, so the schedule restarts at the full rate) lands elsewhere."""
    rollouts = _rollouts("impala")
    topo = make_topology((0,), LEARNERS, B)
    obs0 = rollouts[0].obs[0]
    agent = _build("impala", schedules.Horizon(N))
    whole, _ = _train(agent, agent.init(jax.random.key(0), obs0), rollouts, topo)
    first, _ = _train(agent, agent.init(jax.random.key(0), obs0), rollouts[:N // 2], topo)
    params_only = agent.init(jax.random.key(0), obs0)._replace(params=first.params)
    other, rates = _train(agent, params_only, rollouts[N // 2:], topo)
    assert rates[0] == pytest.approx(AGENTS["impala"][1].learning_rate)  # restarted schedule
    diff = max(float(np.abs(a - b).max()) for a, b in zip(
        jax.tree.leaves(other.params), jax.tree.leaves(whole.params)))
    assert diff > 1e-3, diff
