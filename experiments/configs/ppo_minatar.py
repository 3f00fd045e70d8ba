"""PPO on MinAtar (Young & Tian 2019, arXiv:1903.03176) through gymnax, with the Anakin
runtime (docs/minatar.md):

    python experiments/ppo_gymnax.py --config=experiments/configs/ppo_minatar.py \
        --config.env.name=gymnax:SpaceInvaders-MinAtar --config.num_seeds=10

Games: gymnax:{Asterix,Breakout,Freeway,SpaceInvaders,Seaquest}-MinAtar (gymnax 1.0.1). gymnax's
MinAtar has no sticky actions and ends every episode at a step limit (1000 steps; Freeway 2500),
where the MinAtar paper uses sticky actions (p = 0.1) and no limit: results are not
like-for-like with the paper's (docs/results.md says where each reference stands).

Variants:
- default: the MinAtar paper's network (`minatar_cnn`: one 3x3 conv of 16 channels, a dense
  layer of 128; policy and value heads on the one torso, as the paper's AC(lambda),
  examples/AC_lambda.py lines 68-80 of github.com/kenjyoung/MinAtar at 4241f24) trained with
  purejaxrl's MinAtar PPO hyperparameters (below). XLA:CPU computes convolution gradients
  inside `lax.scan` ~8x slower (measured on this VM; docs/ppo.md, jax-ml/jax#12868), so the
  SGD steps are unrolled (`agent.loop="unroll"`); an update takes longer than the paced
  call's target (`call_target_s`), so each compiled call runs one update. It
  bootstraps on the time limit (`bootstrap_truncation=True`, the project's default: a step
  limit is not the game's end), where purejaxrl does not.
- purejaxrl: purejaxrl's MinAtar PPO, field by field (github.com/luchris429/purejaxrl at
  31756b1, examples/brax_minatar.ipynb: the config cell at lines 331-346, the network at lines
  69-105; tests/experiments/test_reference_settings.py lists each field with its line): an MLP
  of 64x64 ReLU units on the flattened grid, separate policy and value torsos.
- debug: 4 envs x 8 steps, 256 steps in all (smoke tests).

Hyperparameters of both (purejaxrl's notebook; its `done` merges termination and the time limit,
so `:purejaxrl` has `bootstrap_truncation=False`; the other variants keep the default, True):
64 envs x 128 steps per update, 4 epochs of 8 minibatches of 1024 shuffled single steps, Adam
lr 5e-3 decayed linearly to 0 over the run (eps 1e-5), global gradient norm clipped at 0.5,
gamma 0.99, GAE lambda 0.95, clip 0.2 (policy and value), value
cost 0.5, entropy cost 0.01, advantages normalised per minibatch, rewards unclipped, 10M steps.
"""
import ml_collections

from agents.ppo.config import PPOConfig
from experiments.configs.common import (agent_fields, anakin_fields, network_fields,
                                        runtime_fields, vector_env)

VARIANTS = ("default", "purejaxrl", "debug")
GAMES = tuple(f"gymnax:{g}-MinAtar"
              for g in ("Asterix", "Breakout", "Freeway", "SpaceInvaders", "Seaquest"))


def purejaxrl_agent() -> PPOConfig:
    """purejaxrl's MinAtar PPO (examples/brax_minatar.ipynb, config cell)."""
    return PPOConfig(
        learning_rate=5e-3,            # LR
        lr_decay=True,                 # ANNEAL_LR (per update, as here)
        num_epochs=4,                  # UPDATE_EPOCHS
        num_minibatches=8,             # NUM_MINIBATCHES
        minibatch_axis="sample",       # a permutation of the flattened batch per epoch
        discount=0.99,                 # GAMMA
        gae_lambda=0.95,               # GAE_LAMBDA
        clip_eps=0.2,                  # CLIP_EPS (ratio)
        value_clip_eps=0.2,            # CLIP_EPS (value_pred_clipped)
        entropy_cost=0.01,             # ENT_COEF
        value_cost=0.5,                # VF_COEF
        max_grad_norm=0.5,             # MAX_GRAD_NORM
        adam_eps=1e-5,                 # optax.adam(..., eps=1e-5)
        normalize_advantages=True,     # gae normalised inside the minibatch loss
        reward_clip=0.0,               # rewards as the env gives them
        # purejaxrl's rule: its GAE multiplies by (1 - done) (brax_minatar.ipynb@31756b1, JSON
        # lines 170 and 195-198), gymnax's done of its day merging the game's end and the step
        # limit. Not PPOConfig's default (True), so only the :purejaxrl variant keeps it
        # (get_config); the others bootstrap on the limit.
        bootstrap_truncation=False,    # done = terminated or truncated
        correction="none")             # on-policy


def get_config(variant: str = "default") -> ml_collections.ConfigDict:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {VARIANTS}.")
    config = ml_collections.ConfigDict()
    runtime_fields(config)
    config.agent_name = "ppo"
    anakin_fields(config)
    config.runtime = "anakin"          # anakin | sebulba (the same JAX env stepped from the host)
    config.synchronous = True          # on-policy (Anakin always is)
    config.num_actor_threads = 1
    config.num_envs = 64               # purejaxrl NUM_ENVS (per process, split over devices)
    config.unroll_length = 128         # purejaxrl NUM_STEPS
    config.total_env_steps = 10_000_000  # purejaxrl TOTAL_TIMESTEPS
    config.checkpoint_every_minutes = 10.0
    config.env = vector_env("gymnax:Breakout-MinAtar")
    config.env.options = ml_collections.ConfigDict()  # gymnax EnvParams overrides
    config.network = network_fields("minatar_cnn", shared_torso=True)
    config.agent = agent_fields(purejaxrl_agent())
    config.agent.loop = "unroll"       # conv gradients inside lax.scan are slow on XLA:CPU
    # A step limit is not the game's end: bootstrap there (only the reference variant,
    # :purejaxrl, treats truncation as a game's end, as its reference does).
    config.agent.bootstrap_truncation = variant != "purejaxrl"
    if variant == "purejaxrl":
        config.network = network_fields("mlp", shared_torso=False)
        config.network.mlp_hidden_sizes = (64, 64)   # Dense(64) x 2 per torso
        config.network.torso_kwargs = {"activation": "relu"}
        config.agent.loop = "scan"
    elif variant == "debug":
        config.num_envs = 4
        config.unroll_length = 8
        config.total_env_steps = 256
        config.agent.num_minibatches = 2
        config.agent.num_epochs = 2
        config.console_every_s = 0.0
    return config
