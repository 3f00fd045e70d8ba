"""PPO on EnvPool's highway family (C++ ports of highway-env), judged by the crash rate.

    python experiments/train.py --config=experiments/configs/ppo_highway.py   # HighwayFast-v0

Variants: `fast` (default; `HighwayFast-v0`: 5x5 kinematics observation of the 5 nearest
vehicles, 5 discrete meta-actions, 30 one-second steps per game), `racetrack`
(`Racetrack-v0`: a 2x12x12 occupancy grid of presence and road around the car, continuous
steering in [-1, 1] at a set speed, up to 1,500 steps at 5 Hz, ended by leaving the road or
a crash), `parking` (`Parking-v0`: goal-conditioned, a dict observation of the
ego state, the achieved and the desired goal, continuous throttle and steering, up to 500
steps at 5 Hz, success when the car is in its slot), `debug` (a few updates). The results,
commands and wall times are in docs/driving.md.

The settings are highway-env's own PPO script for this task, [H] `scripts/sb3_highway_ppo.py`
(Farama-Foundation/HighwayEnv, commit 23d7d0c): Stable-Baselines3 PPO with 6 envs x
`n_steps` = 64 * 12 // 6 = 128 steps per update, minibatches of 64 samples (12 per epoch), 10
epochs, lr 5e-4, gamma 0.8, separate policy and value MLPs of [256, 256]; the rest is
Stable-Baselines3's PPO defaults [S] (stable_baselines3/ppo/ppo.py and
common/policies.py: gae_lambda 0.95, clip 0.2, no value clipping, ent_coef 0, vf_coef 0.5,
max_grad_norm 0.5, advantages normalised per minibatch, a constant learning rate, Adam eps
1e-5, tanh MLPs with orthogonal init; Box actions a diagonal Gaussian with a learned
log-std vector starting at 0, clipped to the bounds). [H] trains for 20k steps; the tables run
200k. Racetrack-v0 takes highway-env's PPO script for it, [R] `scripts/sb3_racetracks_ppo.py`
(the same commit): [H]'s settings but gamma 0.9, trained for 100k steps. highway-env has no
PPO script for Parking-v0: it keeps [H]'s settings with the discount of the task's own script
([P] `scripts/parking_her.ipynb`, SAC with hindsight relabelling: gamma 0.95).
"""
import ml_collections

from agents.ppo.config import PPOConfig
from experiments.configs.common import agent_fields, network_fields, runtime_fields, vector_env

VARIANTS = ("fast", "racetrack", "parking", "debug")


def get_config(variant: str = "fast") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "ppo"
    config.synchronous = True          # on-policy, as [S]: no policy lag, no correction
    config.num_actor_threads = 1
    config.num_envs = 6                # [H] n_cpu
    config.unroll_length = 128         # [H] n_steps = batch_size * 12 // n_cpu
    config.total_env_steps = 200_000   # [H] 20k; docs/driving.md's table at 200k
    config.env = vector_env("HighwayFast-v0")
    # The crash rate (the share of games that end in a crash) and the mean speed, per game,
    # beside the return: in training (episode/*) and in every evaluation (eval/*).
    config.env.episode_metrics = "crashed:max,speed:mean"
    # The final policy's greedy evaluation over 100 games (the run ends with one), and one
    # every 65 updates (~50k steps).
    config.eval_every_updates = 65
    config.eval_episodes = 100
    config.network = network_fields("mlp", shared_torso=False)  # [H] pi and vf nets apart
    config.network.mlp_hidden_sizes = (256, 256)                # [H] net_arch; tanh as [S]
    config.agent = agent_fields(PPOConfig(
        learning_rate=5e-4,            # [H]
        lr_decay=False,                # [S] a constant learning rate
        discount=0.8,                  # [H] gamma
        gae_lambda=0.95,               # [S]
        num_epochs=10,                 # [H] n_epochs
        num_minibatches=12,            # [H] 768 samples per update / batch_size 64
        minibatch_axis="sample",       # [S] minibatches of single shuffled steps
        clip_eps=0.2,                  # [S] clip_range
        value_clip_eps=0.0,            # [S] clip_range_vf=None
        entropy_cost=0.0,              # [S] ent_coef
        # [S] vf_coef 0.5 on the plain mean squared error; this library's value loss is
        # 0.5 * (V - G)^2, so the same weight is value_cost 1.0.
        value_cost=1.0,
        max_grad_norm=0.5,             # [S]
        adam_eps=1e-5,                 # [S]
        reward_clip=0.0,               # [S] rewards as the env gives them
    ))
    if variant == "racetrack":
        config.env.name = "Racetrack-v0"
        config.agent.discount = 0.9                 # [R] gamma
        # EnvPool 1.2.5's Racetrack-v0 starts every game from the same state (highway-env's
        # Python one places the other car at random): a greedy policy would play one game
        # 100 times, so the evaluation samples its actions.
        config.eval_policy = "sample"
        config.eval_num_envs = 50
    if variant == "parking":
        config.env.name = "Parking-v0"
        config.env.episode_metrics = "crashed:max,is_success:max,speed:mean"
        # [P] gamma; the dict observation's three vectors are concatenated by the MLP torso,
        # as Stable-Baselines3's MultiInputPolicy does.
        config.agent.discount = 0.95
    if variant == "debug":
        config.total_env_steps = 3 * 768
        config.eval_every_updates = 2
        config.eval_episodes = 4
        config.console_every_s = 0.0
    return config
