"""Config for the driving example; variants `:ppo` (default) and `:impala`, and `:ppo_auto` /
`:impala_auto` with the library's built-in `auto` torso instead of the example's own.

    python -m examples.driving.train --config=examples/driving/config.py:ppo
    python -m examples.driving.train --config=examples/driving/config.py:impala
    python -m examples.driving.train --config=examples/driving/config.py:ppo_auto

The env and torso are the example's own (registered by importing `examples.driving`);
everything else is the library's. The `_auto` variants use no torso of the example's: each
observation leaf gets the encoder its shape calls for (networks/encoders.py: MinAtar's CNN on
the 16x16 grid, an MLP on the sensor vector, a fused ReLU layer). `env.options` and `network.torso_kwargs` are passed to the
env maker and the torso, so they can be changed from the command line like any field
(`--config.env.options.sensor_noise=0.1`, `--config.network.torso_kwargs.hidden=256`).
"""
import ml_collections

from agents.impala.config import ImpalaConfig
from agents.ppo.config import PPOConfig
from experiments.configs.common import agent_fields, network_fields, runtime_fields

VARIANTS = ("ppo", "impala", "ppo_auto", "impala_auto")


def get_config(variant: str = "ppo") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    variant, _, builtin = variant.partition("_")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = variant        # a registered agent (agents.register_agent)
    config.num_actor_threads = 1
    config.num_envs = 32
    config.unroll_length = 32
    config.total_env_steps = 1_000_000  # PPO: 300k (below)
    config.checkpoint_every_minutes = 0.0  # a final checkpoint only
    config.env = ml_collections.ConfigDict(dict(
        name="Driving-v0",             # registered by examples/driving/__init__.py
        num_threads=0,                 # EnvPool-only fields, unused by this env
        max_episode_steps=0,
        workers=0,                     # worker processes stepping the env (0: the actor's)
        # The crash rate and each reward term's sum per game, beside the return
        # (podracer/episode_metrics.py; the env's info holds them).
        episode_metrics="crashed:max,rewards.*:sum",
        options=dict(                  # DrivingEnv's constructor arguments
            max_steps=200,             # time limit (truncation)
            sensor_noise=0.02,         # std of the noise on the state vector
            steer_noise=0.05,          # std of the actuator noise on steering
            car_gap=6.0,               # shortest distance between parked cars (longest: 2x)
        ),
        # Scenarios drawn at every reset over car_gap, sensor_noise, steer_noise, with
        # schedules (a curriculum), e.g. "car_gap=uniform(2.5, 4.0)"; docs/howto_env.md.
        randomize="",
    ))
    config.network = ml_collections.ConfigDict(dict(
        torso="driving_net",           # registered by examples/driving/__init__.py
        torso_kwargs=dict(conv_channels=(16, 32), state_hidden=64, hidden=128),
        shared_torso=True,             # one torso for policy and value
        continuous_bounds="clip",      # steer/throttle: clipped Gaussians in [-1, 1]
        state_dependent_std=False,     # a learned log-std vector
        init_log_std=-0.5,             # initial std 0.6: random steering crashes quickly
    ))
    if builtin:  # the library's torso: every NetworkConfig field, the same heads
        config.network = network_fields("auto", shared_torso=True)
        config.network.continuous_bounds = "clip"
        config.network.init_log_std = -0.5
    if variant == "ppo":
        config.synchronous = False     # asynchronous PPO; V-trace corrects the policy lag
        config.total_env_steps = 300_000  # PPO is far more sample-efficient here
        config.agent = agent_fields(PPOConfig(
            learning_rate=5e-4, num_epochs=4, num_minibatches=2, clip_eps=0.2,
            entropy_cost=0.003, discount=0.99, gae_lambda=0.95, reward_clip=0.0,
            max_grad_norm=0.5,
            # XLA:CPU runs convs inside lax.scan very slowly (measured here: 8.1 s per update
            # with "scan" vs 0.55 s unrolled, for a similar ~2 min first compile).
            loop="unroll"))
    else:
        config.agent = agent_fields(ImpalaConfig(
            optimizer="adam", learning_rate=5e-4, entropy_cost=0.003, reward_clip=0.0,
            max_grad_norm=40.0, discount=0.99))
    return config
