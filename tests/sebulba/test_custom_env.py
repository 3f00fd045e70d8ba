"""A user's Gymnasium env, registered from this module, trains end to end through the generic
experiment entry (experiments/train.py) on 1 actor device + 2 learner devices (faked CPUs),
with a dict (multi-tensor) observation, and the episode statistics are the env's true ones."""
import gymnasium as gym
import jax
import numpy as np

from experiments import train
from sebulba import adapters, registry

EPISODE = 5


class Beacon(gym.Env):
    """Reward 1 for the action that matches the beacon, 0 otherwise; episodes of 5 steps.

    Observation: {"beacon": one-hot float64 [2] (cast to float32 by the adapter),
    "frame": uint8 [3, 3] of 0/1 noise}; a tiny multi-tensor observation.
    """

    observation_space = gym.spaces.Dict({
        "beacon": gym.spaces.Box(0.0, 1.0, (2,), np.float64),
        "frame": gym.spaces.Box(0, 255, (3, 3), np.uint8)})
    action_space = gym.spaces.Discrete(2)

    def __init__(self, episode: int = EPISODE) -> None:
        self.episode, self.t, self.target = episode, 0, 0

    def _obs(self):
        self.target = int(self.np_random.integers(2))
        return {"beacon": np.eye(2)[self.target],
                "frame": self.np_random.integers(0, 2, (3, 3), dtype=np.uint8)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        reward = float(int(action) == self.target)
        self.t += 1
        return self._obs(), reward, self.t >= self.episode, False, {}


def make_beacon(num_envs: int, seed: int, env_config) -> adapters.GymnasiumVectorEnv:
    return adapters.gymnasium_env(lambda: Beacon(**env_config.options), num_envs, seed)


registry.register_env("Beacon-test-v0", make_beacon)


def test_registered_gymnasium_env_trains_on_two_learners(impala_classic_config):
    # impala_classic has no agent_name: experiments/train.py infers IMPALA from its fields.
    config = impala_classic_config(actor_device_ids=(0,), learner_device_ids=(1, 2),
                                   num_actor_threads=1, num_envs=8, unroll_length=10,
                                   total_env_steps=80 * 60, checkpoint_keep=0)
    config.env.name = "Beacon-test-v0"
    config.network.mlp_hidden_sizes = (32,)
    config.agent.learning_rate = 5e-3  # few updates: learn fast
    result = train.run(config)
    assert result.updates == 60
    leaf = jax.tree.leaves(result.learner_state.params)[0]
    assert {d.id for d in leaf.sharding.device_set} == {1, 2}
    summary = result.episode_summary
    # True lengths (reset steps excluded) and returns within [0, 5]; learning lifts the
    # return above the random policy's 2.5.
    assert summary["episode/length_mean"] == EPISODE
    assert summary["episode/count"] >= 60 * 8 * 10 / (EPISODE + 1) - 8
    assert 0.0 <= summary["episode/return_mean"] <= EPISODE
    assert summary["episode/return_best_mean"] > 3.0, summary
