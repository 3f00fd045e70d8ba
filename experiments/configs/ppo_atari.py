"""PPO on EnvPool Atari. Variants: `:sync` (on-policy), `:cpu` (sized for a CPU), `:cleanrl`
(cleanrl ppo_atari_envpool.py's setting, field by field: tests/experiments/
test_reference_settings.py; whose published curves docs/results.md compares with), `:debug`
(tiny, seconds on a CPU).

Agent hyperparameters and their sources are in agents/ppo/config.py (PPO paper Table 5, cleanrl
ppo_atari_envpool.py, cleanba cleanba_ppo.py). The batch follows cleanba's PPO: 128 envs per
process (its 2 actor threads x 64) x 128 steps = 16384 samples per update, 4 epochs x 4
minibatches, with the IMPALA ResNet torso; the env section matches impala_atari.py so the two
agents are compared on the same task, with cleanba's budget (50M agent steps = 200M frames, the
span of the learning-rate decay) and evaluation protocol (impala_atari.reference_protocol).
The default is asynchronous: actors run ahead and `agent.correction="auto"` corrects the lag
with V-trace (this codebase's choice, docs/ppo.md). cleanba_ppo.py at the cited commit runs
synchronously by default (`concurrency=False`); `:sync` is that mode. docs/results.md compares
every default with its source.
"""
import ml_collections

from agents.ppo.config import PPOConfig
from experiments.configs.common import (agent_fields, atari_env, network_fields, runtime_fields,
                                        tiny_atari)
from experiments.configs.impala_atari import reference_protocol


VARIANTS = ("default", "sync", "cpu", "cleanrl", "debug")


def cpu_ppo(config: ml_collections.ConfigDict) -> None:
    """`:cpu`: the IMPALA ResNet runs at ~10-20 steps/s on a CPU: the Nature CNN, 2 threads x 16
    envs and shorter rollouts instead, and the SGD loop unrolled (XLA:CPU runs convs inside
    lax.scan ~25x slower, docs/ppo.md). Measured on a loaded 2-core machine (load
    7-9): ~4 min compiling, then 35-70 steps/s; PPO's 4 epochs make it ~4x slower than
    IMPALA's :cpu (~150-190 steps/s on the same machine, 415 quiet)."""
    config.network.torso = "nature_cnn"
    config.num_envs = 32               # x 32 steps: a batch of 1024, cleanrl's 8 envs x 128 steps
    config.num_actor_threads = 2       # 2 threads x 16 envs: the layout measured on 2 cores
    config.unroll_length = 32
    config.total_env_steps = 2_000_000
    config.agent.loop = "unroll"
    # The easier training protocol of impala_atari.cpu_atari (a short CPU budget).
    config.env.episodic_life = True
    config.env.full_action_space = False
    config.env.noop_max = 30


def cleanrl_ppo(config: ml_collections.ConfigDict) -> None:
    """`:cleanrl`: cleanrl ppo_atari_envpool.py's setting (github.com/vwxyzjn/cleanrl at
    fe8d8a0, Args and envpool.make), so a run lies on its published curve at equal agent steps
    (docs/results.md; ~210 steps/s on 2 quiet CPU cores). On top of `:cpu`'s network, loop and
    training protocol: one synchronous actor (on-policy, as cleanrl), 8 envs x 128 steps,
    minibatches of 256 shuffled single steps, EnvPool's default of no sticky actions, and the
    learning-rate decay over cleanrl's 10M agent steps."""
    cpu_ppo(config)
    config.synchronous = True
    config.num_actor_threads = 1
    config.num_envs = 8                # cleanrl num_envs
    config.unroll_length = 128         # cleanrl num_steps
    config.total_env_steps = 10_000_000  # cleanrl total_timesteps (40M frames)
    config.agent.minibatch_axis = "sample"  # cleanrl shuffles flat indices of the batch
    config.env.repeat_action_probability = 0.0  # EnvPool's default, which cleanrl keeps
    # cleanrl's `next_done` merges termination and the time limit: no bootstrap on truncation.
    config.agent.bootstrap_truncation = False


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: "
                         f"{', '.join(repr(v) for v in VARIANTS)}.")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "ppo"
    config.num_actor_threads = 0       # auto: from the CPU cores (sebulba/layout.py)
    config.num_envs = 128              # cleanba's 2 actor threads x 64 envs, per process
    config.unroll_length = 128
    config.total_env_steps = 50_000_000  # cleanba total_timesteps (200M frames)
    config.env = atari_env("Breakout-v5")
    reference_protocol(config.env)
    config.network = network_fields("impala_resnet", shared_torso=True)
    config.agent = agent_fields(PPOConfig())  # see agents/ppo/config.py for each field
    if variant == "sync":
        config.synchronous = True
    elif variant == "cpu":
        cpu_ppo(config)
    elif variant == "cleanrl":
        cleanrl_ppo(config)
    elif variant == "debug":
        tiny_atari(config)
        # XLA:CPU runs convolutions inside lax.scan ~25x slower (docs/ppo.md): unroll the
        # 2 x 2 SGD steps instead.
        config.agent.num_epochs = 2
        config.agent.num_minibatches = 2
        config.agent.loop = "unroll"
    return config
