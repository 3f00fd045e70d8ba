"""PPO on EnvPool MuJoCo (HalfCheetah-v4 by default; any EnvPool MuJoCo id via --config.env.name).

Variants: `:async` (actors run ahead, V-trace corrects the lag), `:pendulum` (Pendulum-v1,
tuned here for the learning test), `:debug` (a few updates).

Defaults are the PPO paper's MuJoCo settings (Schulman et al. 2017, arXiv:1707.06347, Table 3:
horizon T=2048, Adam 3e-4, 10 epochs, minibatch 64, gamma 0.99, GAE lambda 0.95; clip 0.2, sec.
6.1) as reimplemented by cleanrl's ppo_continuous_action.py (Huang et al. 2022, "The 37
implementation details of PPO", ICLR blog track; github.com/vwxyzjn/cleanrl): 1 environment,
2048 steps per update, 32 minibatches of single steps (64 each), lr annealed to 0, Adam eps
1e-5, clipped value loss (0.2), value cost 0.5, no entropy bonus, grad-norm 0.5; separate
64x64 tanh MLPs for policy and value; a state-independent log-std (init 0); Gaussian actions
clipped to the bounds; observations normalised by a running mean/std and clipped to [-10, 10];
rewards divided by the running std of the discounted return and clipped to [-10, 10];
1M steps.

Synchronous by default: the reference is on-policy PPO (collect 2048 steps, then 10 epochs on
them); matching it keeps results comparable with the published curves. With one env the
actor and learner alternate anyway; `:async` overlaps them (actors collect the next rollout
during the update) and corrects the one-update lag with V-trace.

Our clipped Gaussian's log-prob is that of the clipped action (networks/distributions.py),
where cleanrl stores the unclipped sample; both are correct policy gradients.
"""
import ml_collections

from agents.ppo.config import PPOConfig
from experiments.configs.common import agent_fields, network_fields, runtime_fields, vector_env

VARIANTS = ("default", "async", "pendulum", "debug")


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "ppo"
    config.num_actor_threads = 1
    config.num_envs = 1
    config.unroll_length = 2048
    config.total_env_steps = 1_000_000
    config.synchronous = True
    config.env = vector_env("HalfCheetah-v4")
    # auto: an MLP on a vector observation (the same parameters as torso="mlp"), one encoder
    # per leaf of a dict observation (networks/encoders.py).
    config.network = network_fields("auto", shared_torso=False)
    config.agent = agent_fields(PPOConfig(
        discount=0.99, gae_lambda=0.95, clip_eps=0.2, value_clip_eps=0.2, value_cost=0.5,
        entropy_cost=0.0, num_epochs=10, num_minibatches=32, minibatch_axis="sample",
        learning_rate=3e-4, lr_decay=True, adam_eps=1e-5, max_grad_norm=0.5,
        reward_clip=10.0, obs_norm=True, obs_clip=10.0, reward_scaling=True, loop="scan"))
    if variant == "async":
        config.synchronous = False
    elif variant == "pendulum":
        # Tuned here (docs/mujoco.md): many envs for throughput, gamma 0.9 as rl-baselines3-zoo's
        # PPO Pendulum-v1 (Raffin 2020), larger lr; no reward scaling.
        config.env.name = "Pendulum-v1"
        config.num_envs = 16
        config.unroll_length = 128
        config.total_env_steps = 500_000
        config.agent.discount = 0.9
        config.agent.learning_rate = 1e-3
        config.agent.num_epochs = 10
        config.agent.num_minibatches = 16
    elif variant == "debug":
        config.unroll_length = 64
        config.total_env_steps = 256
        config.agent.num_minibatches = 4
        config.agent.num_epochs = 2
        config.console_every_s = 0.0
    return config
