"""EnvPool adapter: id checking and the step semantics the losses rely on."""
import numpy as np
import pytest

from sebulba.envs import EnvConfig, check_env_id, make_env


def test_unknown_env_id_names_close_matches():
    with pytest.raises(ValueError, match=r"Unknown EnvPool environment id 'Pong-v4'.*Pong-v5"):
        check_env_id("Pong-v4")


def test_truncation_then_reset_step():
    """Time limit: truncated with the real final obs, then a reset step with reward 0."""
    env = make_env(EnvConfig(name="CartPole-v1", max_episode_steps=5), num_envs=2, seed=0)
    env.reset()
    zeros = np.zeros(2, np.int32)
    steps = [env.step(zeros) for _ in range(4)]
    assert not any(ts.truncated.any() or ts.terminated.any() for ts in steps)
    final = env.step(zeros)
    assert final.truncated.all() and not final.terminated.any()
    assert final.episode_over.all()
    reset = env.step(zeros)
    np.testing.assert_array_equal(reset.reward, 0.0)
    assert not reset.truncated.any() and not reset.episode_over.any()
    # The reset observation is a fresh start, not the final one.
    assert not np.allclose(reset.obs, final.obs)
    env.close()


def test_atari_life_loss_is_not_episode_over():
    """Episodic life: a lost life terminates the training episode but not the game."""
    env = make_env(EnvConfig(name="Breakout-v5", noop_max=1), num_envs=1, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    life_losses, game_overs = 0, 0
    for _ in range(3000):
        ts = env.step(rng.integers(0, 4, 1).astype(np.int32))
        life_losses += int(ts.terminated[0] and not ts.episode_over[0])
        game_overs += int(ts.episode_over[0])
        if game_overs:
            break
    assert life_losses >= 1 and game_overs == 1
    assert env.observation_space.shape == (4, 84, 84)
    env.close()


@pytest.mark.parametrize("field, value, match", [
    ("noop_max", 0, r"noop_max=0; must be >= 1"),
    ("repeat_action_probability", 1.5, r"repeat_action_probability=1.5 must be in \[0, 1\]"),
    ("stack_num", 0, r"stack_num=0 must be >= 1"),
])
def test_bad_env_config_raises(field, value, match):
    with pytest.raises(ValueError, match=match):
        EnvConfig(**{field: value})
