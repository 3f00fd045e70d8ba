"""Synchronous PPO acts with exactly the parameters its learner updates from.

In synchronous mode (config.synchronous=True, correction "none") the anchor pi_old of an update
is the actor's behaviour policy, and the first SGD step of the update runs with the parameters
the learner started from. If the actors acted with those very parameters, that step's ratio
pi_theta / pi_old is 1 up to rounding: clip fraction 0, approximate KL ~0. The policy-lag
counter only compares version numbers, so parameters published early, late or altered on the
way to the actors would pass it; these two metrics would not. A short real run on CartPole
(EnvPool, actor thread, learner on two other devices, logging) checks them on every update.
"""

from experiments import ppo_atari
from experiments.configs import ppo_classic
from tests.helpers import quiet_config, read_metrics


UPDATES = 6


def test_first_minibatch_is_on_policy_in_every_update(tmp_path):
    config = quiet_config(ppo_classic.get_config("sync"), tmp_path, actor_device_ids=(0,),
                          learner_device_ids=(1, 2),  # params travel learner -> actor device
                          num_envs=8, unroll_length=16, total_env_steps=UPDATES * 8 * 16)
    assert config.synchronous and config.agent.num_minibatches == 4
    ppo_atari.run(config)
    rows = read_metrics(tmp_path)
    assert len(rows) == UPDATES
    for i, r in enumerate(rows):
        assert r["policy_lag/max"] == 0, (i, r["policy_lag/max"])
        assert r["ppo/first_minibatch_clip_frac"] == 0.0, (i, r)
        # float32: the log-probs of actor and learner differ by rounding only (~1e-7).
        assert abs(r["ppo/first_minibatch_approx_kl"]) < 1e-6, (i, r)
    # The check can fail: the later SGD steps of an update do move the policy away from the
    # anchor, and the averaged metrics show it.
    assert max(r["policy/approx_kl"] for r in rows) > 1e-5
