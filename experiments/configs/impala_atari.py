"""IMPALA on EnvPool Atari. Variants: `:cpu` (sized for a CPU), `:debug` (tiny, seconds on a
laptop CPU).

The default trains the IMPALA ResNet, a GPU-sized network: on a CPU it runs at ~100 env
steps/s (97 on 2 quiet cores with the auto layout, 2026-12-01; first update after 10-40 s).
`:cpu` trains the Nature CNN on 2 threads x 16 envs, the layout measured in the README's
throughput table (436 steps/s end to end on 2 quiet cores; 150-190 on the same machine shared
at load 7).

Hyperparameter sources are cited in agents/impala/config.py and compared in docs/results.md.
The default follows cleanba's IMPALA (github.com/vwxyzjn/cleanba, cleanba/cleanba_impala.py),
whose scores are the reference figures: the same evaluation protocol (`reference_protocol`,
Machado et al. 2018), 50M agent steps (200M frames; the learning-rate decay spans them), unroll
20. Known difference: cleanba steps 128 envs and splits each update into 4 minibatches of 640
samples; this learner takes one step on all envs: on a 16-core host the auto layout runs 2
threads x 32 envs x 20 = 1280 samples, half as many updates per frame.
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
    ResNet (whose backward pass dominates on a CPU), 2 actor threads x 16 envs (2 cores: one
    thread steps its envs while the other waits for inference), and a budget a CPU finishes in
    hours, not weeks."""
    config.network.torso = "nature_cnn"
    config.num_actor_threads = 2       # explicit: the layout measured on 2 cores (not auto)
    config.num_envs = 16
    config.total_env_steps = 2_000_000  # ~1.5 h at ~400 steps/s
    # A short CPU budget keeps the easier training protocol of cleanrl's ppo_atari_envpool.py
    # (a life loss ends a training episode, minimal action set, up to 30 no-ops; sticky actions
    # stay on), not the reference one; scores are still whole games (docs/results.md).
    config.env.episodic_life = True
    config.env.full_action_space = False
    config.env.noop_max = 30


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "impala"
    config.total_env_steps = 50_000_000  # cleanba total_timesteps (200M frames)
    config.env = atari_env("Breakout-v5")
    reference_protocol(config.env)
    config.network = network_fields("impala_resnet", shared_torso=True)
    config.agent = agent_fields(ImpalaConfig())  # see agents/impala/config.py for each field
    if variant == "debug":
        tiny_atari(config)
    elif variant == "cpu":
        cpu_atari(config)
    elif variant != "default":
        raise ValueError(f"unknown variant {variant!r}; allowed: 'default', 'cpu', 'debug'.")
    return config
