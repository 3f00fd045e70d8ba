"""Gymnasium and dm_env adapters and the env registry: EnvPool's step semantics (termination
vs truncation, the one-step-late reset step, true episode returns) and the error messages."""
import dm_env
import gymnasium as gym
import numpy as np
import pytest
from dm_env import specs

from sebulba import adapters, envs, registry
from sebulba.actor_pools import EpisodeCounter


class Countdown(gym.Env):
    """Dict obs; reward = the step number; terminates after `length` steps."""

    observation_space = gym.spaces.Dict({"t": gym.spaces.Box(0, 100, (1,), np.float64),
                                         "img": gym.spaces.Box(0, 255, (2, 2), np.uint8)})
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int = 3) -> None:
        self.length, self.t = length, 0

    def _obs(self):
        return {"t": np.array([self.t], np.float64), "img": np.full((2, 2), self.t, np.uint8)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(self.t), self.t >= self.length, False, {}


def test_gymnasium_termination_truncation_and_reset_step():
    # env 0 terminates after 3 steps; env 1 is cut by a time limit after 2 (truncation).
    fns = [lambda: Countdown(3), lambda: gym.wrappers.TimeLimit(Countdown(10), 2)]
    vec = gym.vector.SyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    env = adapters.as_runtime_env(vec, 2, seed=0, where="test")
    assert isinstance(env, adapters.GymnasiumVectorEnv)
    obs = env.reset()
    assert obs["t"].dtype == np.float32 and obs["img"].dtype == np.uint8  # float64 -> float32
    steps = [env.step(np.zeros(2, np.int32)) for _ in range(4)]
    # Step 2: env 1 truncated with its real final obs (t=2).
    assert steps[1].truncated.tolist() == [False, True] and not steps[1].terminated.any()
    assert steps[1].obs["t"][1, 0] == 2.0
    # Step 3: env 0 terminated (final obs t=3); env 1 is in its reset step.
    assert steps[2].terminated.tolist() == [True, False]
    assert steps[2].obs["t"][0, 0] == 3.0
    assert steps[2].reward[1] == 0.0 and steps[2].obs["t"][1, 0] == 0.0
    assert not steps[2].truncated[1] and not steps[2].episode_over[1]
    # Step 4: env 0's reset step.
    assert steps[3].reward[0] == 0.0 and steps[3].obs["t"][0, 0] == 0.0
    assert not steps[3].terminated.any()
    env.close()


def test_gymnasium_refuses_same_step_autoreset():
    vec = gym.vector.SyncVectorEnv([Countdown], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    with pytest.raises(ValueError, match=r"autoreset_mode=SAME_STEP.*needs NEXT_STEP"):
        adapters.GymnasiumVectorEnv(vec, 0)


class DmCounter(dm_env.Environment):
    """reward 1 per step; LAST after `length` steps with discount `final_discount`."""

    def __init__(self, length: int, final_discount: float) -> None:
        self.length, self.final_discount, self.t = length, final_discount, 0
        self.actions = []

    def _obs(self):
        return {"t": np.float64(self.t), "img": np.full((2, 2), self.t, np.uint8)}

    def reset(self):
        self.t = 0
        return dm_env.restart(self._obs())

    def step(self, action):
        self.actions.append(action)
        self.t += 1
        if self.t < self.length:
            return dm_env.transition(1.0, self._obs())
        if self.final_discount == 0.0:
            return dm_env.termination(1.0, self._obs())
        return dm_env.truncation(1.0, self._obs(), discount=self.final_discount)

    def observation_spec(self):
        return {"t": specs.Array((), np.float64, "t"),
                "img": specs.BoundedArray((2, 2), np.uint8, 0, 255, "img")}

    def action_spec(self):
        return specs.DiscreteArray(3, name="a")


def test_dm_env_round_trip():
    terminal, cut = DmCounter(3, 0.0), DmCounter(2, 1.0)
    env = adapters.as_runtime_env([terminal, cut], 2, seed=0, where="test")
    assert isinstance(env, adapters.DmEnvBatch)
    assert env.action_space == gym.spaces.Discrete(3)
    assert env.observation_space["img"] == gym.spaces.Box(0, 255, (2, 2), np.uint8)
    obs = env.reset()
    assert obs["t"].shape == (2,) and obs["t"].dtype == np.float32
    counter, games = EpisodeCounter(2), []
    prev_done = np.zeros(2, bool)
    seen = []
    for i in range(7):
        ts = env.step(np.array([i % 3, 2], np.int64))
        counter.update(ts, ~prev_done, games)
        prev_done = ts.terminated | ts.truncated
        seen.append(ts)
    # env 1: LAST with discount 1 = truncation at step 2, reset step at 3 (reward 0, obs t=0).
    assert [bool(ts.truncated[1]) for ts in seen] == [False, True, False, False, True, False,
                                                      False]
    assert not any(ts.terminated[1] for ts in seen)
    assert seen[2].reward[1] == 0.0 and seen[2].obs["t"][1] == 0.0
    # env 0: LAST with discount 0 = termination at step 3, its final obs is the real one.
    assert [bool(ts.terminated[0]) for ts in seen] == [False, False, True, False, False, False,
                                                       True]
    assert seen[2].obs["t"][0] == 3.0 and seen[3].obs["t"][0] == 0.0
    # The reset step's action never reached the env; actions arrive as the spec's dtype.
    assert terminal.actions == [0, 1, 2, 1, 2, 0] and len(cut.actions) == 5
    assert all(np.asarray(a).dtype == np.int32 for a in terminal.actions)  # DiscreteArray's
    # True returns and lengths of finished games: (3, 3) for env 0; (2, 2) twice for env 1.
    assert sorted(games) == [(2.0, 2), (2.0, 2), (3.0, 3), (3.0, 3)]


def test_spec_to_space():
    space = adapters.spec_to_space({
        "steer": specs.BoundedArray((2,), np.float64, -1.0, 1.0),
        "gear": specs.BoundedArray((), np.int32, 0, 4),
        "keys": specs.BoundedArray((3,), np.int64, 0, [1, 2, 3])})
    assert space["steer"] == gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert space["gear"] == gym.spaces.Discrete(5)
    assert space["keys"] == gym.spaces.MultiDiscrete([2, 3, 4])


class NoStep:
    num_envs, observation_space, action_space = 2, gym.spaces.Discrete(2), gym.spaces.Discrete(2)

    def reset(self):
        return np.zeros(2)

    def close(self):
        pass


def test_registered_maker_errors_name_what_is_wrong():
    makers = {"t-nostep": lambda n, s, c: NoStep(),
              "t-single": lambda n, s, c: Countdown(),
              "t-count": lambda n, s, c: adapters.gymnasium_env(Countdown, n + 1, s)}
    for name, maker in makers.items():
        registry.register_env(name, maker)
    try:
        with pytest.raises(TypeError, match=r"'t-nostep'.*NoStep, which lacks \['step'\]"):
            envs.make_env(envs.EnvConfig(name="t-nostep"), 2, 0)
        with pytest.raises(TypeError, match=r"one Countdown.*adapters.gymnasium_env"):
            envs.make_env(envs.EnvConfig(name="t-single"), 2, 0)
        with pytest.raises(ValueError, match=r"num_envs=3; the runtime asked for 2"):
            envs.make_env(envs.EnvConfig(name="t-count"), 2, 0)
        with pytest.raises(ValueError, match=r"already registered"):
            registry.register_env("t-nostep", lambda n, s, c: None)
        # Unknown ids list close matches among registered envs as well as EnvPool ids.
        # Other test modules may register envs too: check ours are listed, not the whole list.
        with pytest.raises(ValueError, match=r"Close matches: t-nostep.*Registered envs: ") as e:
            envs.check_env_id("t-nostepp")
        listed = str(e.value).split("Registered envs: ", 1)[1]
        for name in makers:
            assert name in listed, listed
    finally:
        for name in makers:
            registry.unregister_env(name)


def test_gymnasium_ids_need_no_registration():
    envs.check_env_id("gymnasium:CartPole-v1")
    with pytest.raises(ValueError, match=r"Unknown gymnasium environment id 'CartPol-v1'.*"
                                         r"CartPole-v1"):
        envs.check_env_id("gymnasium:CartPol-v1")
    env = envs.make_env(envs.EnvConfig(name="gymnasium:CartPole-v1"), 3, 0)
    assert env.reset().shape == (3, 4) and env.action_space == gym.spaces.Discrete(2)
    env.close()


def test_envpool_dict_observations_are_float32_trees():
    """EnvPool's dm_control tasks return dict observations of float64 arrays."""
    env = envs.make_env(envs.EnvConfig(name="CheetahRun-v1"), 2, 0)
    obs = env.reset()
    assert isinstance(obs, dict) and obs
    assert all(v.dtype == np.float32 and v.shape[0] == 2 for v in obs.values())
    env.close()
