"""Config sections every experiment config shares: runtime, env, network, agent.

Each experiment config (flax-examples style `get_config()`) builds its ConfigDict from these
and then sets only what differs, so a field means the same in every config and is documented
once, here (the agents' fields are documented in their frozen dataclasses, agents/*/config.py).
"""
import dataclasses

import ml_collections


def runtime_fields(config: ml_collections.ConfigDict) -> None:
    """Fields shared by every experiment config (runtime, logging)."""
    config.seed = 0                    # base seed: params init, actor RNG, env seeds
    config.actor_device_ids = (0,)     # local device indices that run actor threads
    config.learner_device_ids = (0,)   # local device indices that share the learner update
    config.num_actor_threads = 0       # actor threads per actor device; 0 = auto from the CPU
                                       # cores (sebulba/layout.py; the layout is printed)
    config.num_envs = 32               # environments per actor thread
    config.unroll_length = 20          # T: steps per rollout
    config.total_env_steps = 10_000_000  # agent steps in total (x4 frames on Atari)
    config.queue_size = 1              # rollouts buffered per actor thread
    config.synchronous = False         # True: actors wait for params of the latest update
    config.stall_warning_s = 120.0     # warn if the learner waits this long for data (or an
                                       # actor for params); docs/robustness.md
    config.join_timeout_s = 10.0       # seconds to wait for threads on shutdown
    config.max_nonfinite_updates = 10  # stop after N skipped non-finite updates in a row
    config.restart_envs_on_error = False  # rebuild an actor's failing EnvPool instead of stopping
    config.max_env_restarts = 3        # env pool rebuilds per actor thread before giving up
    config.actor_overlap = "auto"      # on: half-pools stepped in turn (env step || policy);
                                       # off; auto: on for EnvPool with an accelerator actor
    # stop early once the 100-game mean return reaches this (None = off)
    config.stop_at_return = ml_collections.config_dict.placeholder(float)
    config.run_dir = ""                # "" = runs/<experiment>-<env>-s<seed>-<time>
    config.checkpoint_every_updates = 0     # checkpoint every N updates (0 = off); also at the end
    config.checkpoint_every_minutes = 10.0  # ... and every M minutes (0 = off); docs/checkpoints.md
    config.checkpoint_keep = 3         # newest checkpoints kept in <run_dir>/checkpoints (0 = none)
    config.resume = ""                 # run dir or checkpoint dir to continue ("" = fresh run)
    config.eval_every_updates = 0      # every N updates, play eval_episodes whole games in the
                                       # background and log eval/* (0 = off); docs/checkpoints.md
    config.eval_episodes = 10          # games per evaluation (true scores, no episodic life)
    config.eval_num_envs = 8           # parallel envs of an evaluation
    config.eval_policy = "greedy"      # greedy (the distribution's mode) | sample
    config.distributed = ml_collections.ConfigDict(dict(
        mode="auto",                   # auto: join when num_processes > 1 or under SLURM; on; off
        coordinator_address="",        # host:port of process 0 ("" = detect, e.g. SLURM)
        num_processes=1,               # processes in the job (one per host)
        process_id=0,                  # this process's rank
        local_device_ids=ml_collections.config_dict.placeholder(tuple),  # None = all local
        heartbeat_timeout_s=60,        # a dead peer aborts the others after about this long
        init_timeout_s=300,            # seconds to wait for all processes to join
    ))
    config.console_every_s = 10.0      # seconds between console progress lines
    config.compilation_cache_dir = "~/.cache/sebulba-rl/jax"  # JAX's persistent compilation
                                       # cache: a relaunch loads compiled programs ("" = off)
    config.wandb = ml_collections.ConfigDict(dict(  # Weights & Biases, beside TensorBoard
        project="",                    # W&B project; "" = no W&B logging (the default)
        entity="",                     # W&B user or team ("" = your default entity)
        group="",                      # groups runs in the W&B UI, e.g. a sweep's name
        name="",                       # run name ("" = the run dir's name)
        mode="",                       # online | offline | disabled ("" = wandb's default)
    ))


def atari_env(name: str = "Breakout-v5") -> ml_collections.ConfigDict:
    """EnvPool Atari settings (Machado et al. 2018 protocol: sticky actions, full games for
    evaluation)."""
    return ml_collections.ConfigDict(dict(
        name=name,                     # EnvPool Atari id
        num_threads=0,                 # EnvPool threads per pool (0 = auto)
        max_episode_steps=0,           # 0 = EnvPool default (27000 agent steps)
        episodic_life=True,            # life loss ends training episodes (stats use games)
        repeat_action_probability=0.25,  # sticky actions (Machado et al. 2018)
        noop_max=30,                   # random no-ops on reset
        frame_skip=4,                  # action repeat
        stack_num=4,                   # frames stacked per observation
        img_size=84,                   # frame height and width
        full_action_space=False,       # minimal action set
    ))


def tiny_atari(config: ml_collections.ConfigDict) -> None:
    """The `:debug` variants on Atari: Pong, Nature CNN, 4 envs x 8 steps, 256 steps in all
    (seconds on a laptop CPU; smoke tests)."""
    config.env.name = "Pong-v5"
    config.network.torso = "nature_cnn"
    config.num_envs = 4
    config.unroll_length = 8
    config.total_env_steps = 256
    config.console_every_s = 0.0


def vector_env(name: str) -> ml_collections.ConfigDict:
    """Settings for a non-Atari env (EnvPool classic control / MuJoCo, gymnasium:<id>, or a
    registered one). The Atari-only fields keep their defaults so that `--config.env.name`
    can switch between families; they are ignored here."""
    config = atari_env(name)
    config.name = name                 # EnvPool id, gymnasium:<id> or a registered env
    return config


def network_fields(torso: str, shared_torso: bool) -> ml_collections.ConfigDict:
    """The actor-critic network (sebulba.experiment.make_network)."""
    return ml_collections.ConfigDict(dict(
        torso=torso,                   # nature_cnn | impala_resnet | mlp | a registered torso
        mlp_hidden_sizes=(64, 64),     # used when torso == mlp
        resnet_channels=(16, 32, 32),  # used when torso == impala_resnet
        shared_torso=shared_torso,     # False: the value head gets its own torso copy
        continuous_bounds="clip",      # Box actions: "clip" (censored Gaussian) or "tanh"
        state_dependent_std=False,     # Box actions: False a learned log-std vector; True a head
        init_log_std=0.0,              # Box actions: initial log-std of the Gaussian
        lstm_size=0,                   # > 0: an LSTM core of this size (docs/recurrent.md)
    ))


def agent_fields(defaults) -> ml_collections.ConfigDict:
    """The agent's frozen dataclass defaults as a ConfigDict (one source of truth)."""
    return ml_collections.ConfigDict(dataclasses.asdict(defaults))
