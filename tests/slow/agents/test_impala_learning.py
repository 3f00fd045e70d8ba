"""Learning test: IMPALA on CartPole-v1 reaches a 100-episode mean return of at least 400.

The run stops as soon as the mean reaches 400 (stop_at_return) or after 1M steps, whichever
comes first. The asynchronous pipeline is not bit-reproducible (which parameter version an
actor uses depends on thread timing), so the same seed can take different paths: the config
(experiments/configs/impala_classic.py) passes at this 1M-step horizon on 24 of 24 seeds
measured, within 64k-212k steps; its former settings failed ~1 run in 10, once in CI.
"""

from experiments import impala_atari


def test_impala_learns_cartpole(impala_classic_config):
    config = impala_classic_config(total_env_steps=1_000_000, stop_at_return=400.0, seed=0)
    result = impala_atari.run(config)
    best = result.episode_summary["episode/return_best_mean"]
    print("IMPALA CartPole:", result.episode_summary)
    assert best >= 400, result.episode_summary
    assert result.env_steps < 1_000_000 + 256
