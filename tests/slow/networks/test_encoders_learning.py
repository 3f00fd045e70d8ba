"""The auto torso learns a task that needs both of its sensors (three learning runs)."""
from tests.fakes import sensors_env


def test_a_task_that_needs_both_sensors_is_learned_only_with_both(tmp_path):
    """SensorsTest-v0 (tests/fakes/sensors_env.py): 8 per game needs the camera's bit and the
    sensors' bit; either alone caps the game at 4 (+ the guessed bit's luck), random plays 2."""
    steps = 200_000
    both = sensors_env.train_run(tmp_path, total_env_steps=steps)
    alone = {hide: sensors_env.train_run(tmp_path, hide, total_env_steps=steps)
             for hide in ("camera", "sensors")}
    best = lambda r: r.episode_summary["episode/return_best_mean"]  # noqa: E731
    print({"both": best(both), **{f"no {h}": best(r) for h, r in alone.items()}})
    assert best(both) >= 7.0
    for r in alone.values():
        assert best(r) <= 4.6  # 4 + the 100-game mean's luck on the guessed bit
