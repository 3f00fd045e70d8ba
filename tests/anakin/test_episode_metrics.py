"""Anakin's device-side episode metrics: the same games and values as the host's
EpisodeAccumulator (Sebulba), with resets and truncation inside one rollout."""
import jax
import jax.numpy as jnp
import numpy as np

from anakin import actor, envs, host_games
from anakin import episode_metrics as game_metrics
from podracer.episode_metrics import EpisodeAccumulator, parse


class Counter:
    """A RawEnv whose info reports a step count, a crash flag and two reward terms; games end
    (terminated) after 3 steps for env parity 0 and are truncated after 4 otherwise."""

    from gymnasium import spaces
    observation_space = spaces.Box(-1e6, 1e6, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, key):
        return jnp.zeros((), jnp.int32), jnp.zeros(1, jnp.float32)

    def transition(self, key, t, action):
        t = t + 1
        info = {"t": t.astype(jnp.float32), "crashed": t == 2,
                "rewards": {"a": jnp.float32(1.0), "b": t.astype(jnp.float32)}}
        return t, t.astype(jnp.float32)[None], 1.0 + t, t >= 3, jnp.bool_(False), info


def test_device_reductions_equal_the_host_accumulator():
    metrics = parse("t:max,t:mean,t:sum,t:last,crashed:max,rewards.b:sum")
    env = envs.AutoReset(Counter())
    assert sorted(envs.info_fields(env)) == ["crashed", "rewards.a", "rewards.b", "t"]
    B, T = 3, 11
    state = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), B))
    totals = game_metrics.zeros(len(metrics), (B,))
    host = EpisodeAccumulator(metrics, B)
    step = jax.jit(jax.vmap(env.step))
    dev_games, host_games = [], []
    for i in range(T):
        state, s = step(jax.random.split(jax.random.key(i), B), state, jnp.zeros(B, jnp.int32))
        x = jax.vmap(lambda info: game_metrics.values(info, metrics))(s.info)
        totals = game_metrics.add(totals, x, s.valid[:, None], metrics)
        out = np.asarray(game_metrics.result(totals, metrics))
        totals = game_metrics.restart(totals, s.episode_over[:, None])
        host.update(jax.tree.map(np.asarray, s.info), np.asarray(s.valid))
        for b in np.nonzero(np.asarray(s.episode_over))[0]:
            dev_games.append(tuple(out[b]))
            host_games.append(host.finish(b))
    assert len(dev_games) == 3 * B  # games end at steps 3, 7, 11 (a reset step between)
    np.testing.assert_allclose(dev_games, host_games, rtol=1e-6)
    # By hand: a game is t = 1, 2, 3.
    np.testing.assert_allclose(dev_games[0], [3, 2, 6, 3, 1, 6])


def test_rollout_carries_the_metrics_of_each_game():
    import agents.ppo as ppo
    from tests.helpers import small_network
    metrics = parse("t:mean,crashed:max,rewards.a:sum")
    env = envs.AutoReset(Counter())
    agent = ppo.make_agent(small_network(env.action_space), ppo.PPOConfig(correction="none"), num_updates=1)
    example = jax.tree.map(lambda x: x[None], env.reset(jax.random.key(0)).obs)
    state = agent.init(jax.random.key(1), example)
    runner = actor.init_runner(agent, env, jax.random.key(2), 2, len(metrics))
    run = jax.jit(lambda s, r: actor.rollout(agent, env, agent.actor_params(s), r, 12,
                                               metrics))
    runner, _, eps = run(state, runner)
    games = host_games.local_episodes(eps)[0]
    # Steps 1-3 a game, step 4 its reset step, ...: three games per env in 12 steps.
    assert games == [(9.0, 3, 2.0, 1.0, 3.0)] * 6
    runner, _, eps = run(state, runner)  # the totals carry across rollouts
    assert host_games.local_episodes(eps)[0] == [(9.0, 3, 2.0, 1.0, 3.0)] * 6
