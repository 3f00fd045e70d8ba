"""IMPALA on EnvPool Atari. Variants: `:cpu` (sized for a CPU), `:debug` (tiny, seconds on a
laptop CPU).

The default trains the IMPALA ResNet, a GPU-sized network: on a CPU it runs at ~50 env
steps/s (52-55 on 2 cores, 128 envs x 20 steps per update; first update after ~95 s). `:cpu`
trains the Nature CNN on 16 envs x 5 steps, 80 samples per update (2 actor threads x 8 envs;
~700 agent steps/s end to end on 2 quiet cores); its records are in docs/results.md.

Hyperparameter sources are cited in agents/impala/config.py and compared in docs/results.md.
The default follows cleanba's IMPALA (github.com/vwxyzjn/cleanba, cleanba/cleanba_impala.py),
whose scores are the reference figures: the same evaluation protocol (`reference_protocol`,
Machado et al. 2018), 50M agent steps (200M frames; the learning-rate decay spans them), unroll
20, and cleanba's batch: 128 envs x 20 steps = 2560 samples per update in 4 minibatches of 640
(`num_envs` is per process and fixed by the config: the layout of the host only decides how
many actor threads carry them). Where it differs from cleanba: our loss is a per-sample mean
(the clip and RMSProp epsilon are rescaled to it, agents/impala/config.py), EnvPool's reset
steps are masked out of the loss, and a time-limit truncation bootstraps from the value of the
final observation (cleanba treats it as a termination; `agent.bootstrap_truncation=False`
does so too).
"""
import ml_collections

from agents.impala.config import ImpalaConfig
# Re-exported: user configs written against this module keep working.
from experiments.configs.common import (agent_fields, atari_env, network_fields,  # noqa: F401
                                        runtime_fields, tiny_atari)


def reference_protocol(env: ml_collections.ConfigDict) -> None:
    """The evaluation protocol of Machado et al. 2018 ("Revisiting the Arcade Learning
    Environment", JAIR) as cleanba's Atari runs use it, so the curves compare with theirs.
    Kept by atari_env: sticky actions 0.25, 27000 agent steps (108k frames) per game, true
    game scores in every episode statistic."""
    env.episodic_life = False          # no life-loss signal: Machado et al. 2018 p. 6; cleanba
    env.full_action_space = True       # all 18 actions: Machado et al. 2018 Table 5; cleanba
    env.noop_max = 1                   # no random no-ops (sticky actions randomise): Machado
                                       # et al. 2018 p. 12; cleanba (page refs: cleanba's notes)


def cpu_atari(config: ml_collections.ConfigDict) -> None:
    """`:cpu`: what a CPU backend trains at a useful rate. The Nature CNN instead of the IMPALA
    ResNet (whose backward pass dominates on a CPU), 2 actor threads x 8 envs x 5 steps (2
    cores: one thread steps its envs while the other waits for inference), and a budget a CPU
    finishes in under an hour, not weeks (~700 agent steps/s on 2 quiet cores)."""
    config.network.torso = "nature_cnn"
    # 80 samples per update, A2C's batch (Mnih et al. 2016; openai baselines a2c: 16 envs x 5
    # steps): 8x the updates per agent step of cleanba's 640. With the Nature CNN at 640, six
    # settings stayed at the random policy's Pong score for 0.9-2M steps; at 80 Pong leaves it
    # after 0.75-1.07M steps (four runs) and Breakout learns 3x faster; it runs faster too
    # (docs/results.md, "IMPALA :cpu on Pong-v5"). One gradient step of 80 samples: the clip
    # and RMSProp epsilon follow from it (40/80, (0.01/80)^2: agents/impala/config.py).
    config.num_envs = 16
    config.unroll_length = 5
    config.agent.num_minibatches = 1
    # The layout measured on 2 cores: 2 threads x 8 envs, one steps its envs while the other
    # waits for inference (speed only: the batch is num_envs whatever the threads).
    config.num_actor_threads = 2
    # cleanba decays the learning rate over 50M steps: over this 2M budget it would stay within
    # 4% of 6e-4, so constant here (decaying to 0 over 2M halves it by 1M).
    config.agent.lr_decay = False
    config.total_env_steps = 2_000_000  # ~45-50 min at ~700 steps/s
    # A short CPU budget keeps the easier training protocol of cleanrl's ppo_atari_envpool.py
    # (a life loss ends a training episode, minimal action set, up to 30 no-ops; sticky actions
    # stay on), not the reference one; scores are still whole games (docs/results.md).
    config.env.episodic_life = True
    config.env.full_action_space = False
    config.env.noop_max = 30


VARIANTS = ("default", "cpu", "debug")


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "impala"
    config.total_env_steps = 50_000_000  # cleanba total_timesteps (200M frames)
    # cleanba's batch: 128 envs (its 2 actor threads x 64) x 20 steps = 2560 samples per update,
    # in 4 minibatches of 640 (32 envs x 20 steps), whatever the layout that carries them.
    config.num_envs = 128
    config.env = atari_env("Breakout-v5")
    reference_protocol(config.env)
    config.network = network_fields("impala_resnet", shared_torso=True)
    config.agent = agent_fields(ImpalaConfig())  # see agents/impala/config.py for each field
    config.agent.num_minibatches = 4
    if variant == "debug":
        tiny_atari(config)
    elif variant == "cpu":
        cpu_atari(config)
    elif variant != "default":
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    return config
