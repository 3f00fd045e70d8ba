"""The settings the docs call a reference's are the reference's, field by field, each with its
source: the file and line of the reference at a named commit (read there; the reference code
stays out of this repository).

- `ppo_atari.py:cleanrl` is cleanrl's `ppo_atari_envpool.py` (github.com/vwxyzjn/cleanrl at
  fe8d8a03c41a7ef5b523e2e354bd01c363e786bb): every field below. What the runtime does
  differently by design is listed too (DIFFERENCES) and said in docs/results.md.
- The IMPALA Atari default follows cleanba's `cleanba_impala.py` (github.com/vwxyzjn/cleanba at
  d1f8979c33e4e1c3d4e67f460afcebb42b6889d4) field by field below, apart from the differences
  listed with their reasons (DIFFERENCES_CLEANBA; not called exact). What cleanba leaves to its
  libraries is read in the versions its poetry.lock pins: rlax 0.1.5 (poetry.lock:1959-1960;
  github.com/google-deepmind/rlax at tag v0.1.5, 0c2c9e2185f3b9f1910e562afdd0f952efb74042) and
  EnvPool 0.8.1 (poetry.lock:459-460; github.com/sail-sg/envpool at tag v0.8.1,
  ed79055ca5f70e91079cb55b1e47113d2fac3909). Every field of the resolved config is listed, a
  stated difference, or how the runtime runs (_RUNTIME_ONLY_CLEANBA, each with its reason).
- `ppo_minatar.py:purejaxrl` is purejaxrl's MinAtar PPO, `examples/brax_minatar.ipynb`
  (github.com/luchris429/purejaxrl at 31756b1b9dd2a6d4ba4e2d7d0caa82fd5ec1ac18; lines of the
  .ipynb file as stored, i.e. of its JSON).
"""
import dataclasses

import pytest

from agents.impala import samples_per_step
from experiments import wiring
from experiments.configs import impala_atari, ppo_atari, ppo_minatar
from networks import torsos
from sebulba.envs import EnvConfig

CLEANRL = "cleanrl/ppo_atari_envpool.py@fe8d8a0"
CLEANBA = "cleanba/cleanba_impala.py@d1f8979"
RLAX = "rlax/_src/vtrace.py@0c2c9e2 (v0.1.5)"
ENVPOOL = "envpool/atari/atari_env.h@ed79055 (v0.8.1)"
PUREJAXRL = "purejaxrl/examples/brax_minatar.ipynb@31756b1"

# (field of the read sections, our value, source line, what the reference says there)
PPO_CLEANRL = [
    ("runtime.total_env_steps", 10_000_000, f"{CLEANRL}:41", "total_timesteps: int = 10000000"),
    ("agent.learning_rate", 2.5e-4, f"{CLEANRL}:43", "learning_rate: float = 2.5e-4"),
    ("runtime.num_envs", 8, f"{CLEANRL}:45", "num_envs: int = 8"),
    ("runtime.unroll_length", 128, f"{CLEANRL}:47", "num_steps: int = 128"),
    ("agent.lr_decay", True, f"{CLEANRL}:49", "anneal_lr: bool = True"),
    ("agent.discount", 0.99, f"{CLEANRL}:51", "gamma: float = 0.99"),
    ("agent.gae_lambda", 0.95, f"{CLEANRL}:53", "gae_lambda: float = 0.95"),
    ("agent.num_minibatches", 4, f"{CLEANRL}:55", "num_minibatches: int = 4"),
    ("agent.num_epochs", 4, f"{CLEANRL}:57", "update_epochs: int = 4"),
    ("agent.normalize_advantages", True, f"{CLEANRL}:59", "norm_adv: bool = True"),
    ("agent.clip_eps", 0.1, f"{CLEANRL}:61", "clip_coef: float = 0.1"),
    ("agent.value_clip_eps", 0.1, f"{CLEANRL}:63,305-308",
     "clip_vloss: bool = True; the value clipped by args.clip_coef"),
    ("agent.entropy_cost", 0.01, f"{CLEANRL}:65", "ent_coef: float = 0.01"),
    ("agent.value_cost", 0.5, f"{CLEANRL}:67", "vf_coef: float = 0.5"),
    ("agent.max_grad_norm", 0.5, f"{CLEANRL}:69", "max_grad_norm: float = 0.5"),
    ("agent.target_kl", 0.0, f"{CLEANRL}:71", "target_kl: float = None (off)"),
    ("agent.kl_cost", 0.0, f"{CLEANRL}:296-312", "no KL term in the loss"),
    ("agent.adam_eps", 1e-5, f"{CLEANRL}:200", "optim.Adam(..., eps=1e-5)"),
    ("agent.minibatch_axis", "sample", f"{CLEANRL}:274-280",
     "b_inds = np.arange(batch_size); np.random.shuffle(b_inds): minibatches of single steps"),
    ("agent.shuffle", True, f"{CLEANRL}:277", "np.random.shuffle(b_inds), every epoch"),
    ("agent.reward_clip", 1.0, f"{CLEANRL}:190", "envpool.make(reward_clip=True): the sign"),
    ("agent.bootstrap_truncation", False, f"{CLEANRL}:237,256-259",
     "next_done from envs.step (time limit included) -> nextnonterminal = 1 - next_done"),
    ("agent.obs_norm", False, f"{CLEANRL}:185-192", "no observation normalisation"),
    ("agent.reward_scaling", False, f"{CLEANRL}:185-192", "no reward scaling"),
    ("runtime.synchronous", True, f"{CLEANRL}:219-247", "acts with the parameters it updates"),
    ("env.episodic_life", True, f"{CLEANRL}:189", "episodic_life=True"),
    ("env.repeat_action_probability", 0.0, f"{CLEANRL}:185-192",
     "not set: EnvPool 1.2's Atari default, 0"),
    ("env.noop_max", 30, f"{CLEANRL}:185-192", "not set: EnvPool's default, 30"),
    ("env.full_action_space", False, f"{CLEANRL}:185-192", "not set: EnvPool's default, minimal"),
    ("env.frame_skip", 4, f"{CLEANRL}:185-192", "not set: EnvPool's default, 4"),
    ("env.stack_num", 4, f"{CLEANRL}:185-192", "not set: EnvPool's default, 4"),
    ("env.img_size", 84, f"{CLEANRL}:185-192", "not set: EnvPool's default, 84"),
    ("env.max_episode_steps", 0, f"{CLEANRL}:185-192",
     "not set: EnvPool's default, 27000 agent steps (0 = EnvPool's default here)"),
    ("network.torso", "nature_cnn", f"{CLEANRL}:126-135", "3 convs (32, 64, 64) + Linear 512"),
    ("network.torso_init", "reference", f"{CLEANRL}:117-135",
     "layer_init: orthogonal(sqrt 2), bias 0, on every conv and the 512 layer"),
    ("network.shared_torso", True, f"{CLEANRL}:137-138", "actor and critic on self.network"),
    ("network.lstm_size", 0, f"{CLEANRL}:124-138", "feed-forward"),
]
# By design, not settings: EnvPool's reset steps (the step after an episode end, whose action
# is ignored) are masked out of our losses, where cleanrl trains on them as ordinary steps
# (cleanrl 237: its `dones[t]` marks the step after); the heads' init is fixed in
# networks/heads.py and actor_critic.py as cleanrl's 137-138 (orthogonal 0.01 and 1.0);
# cleanrl's avg_episodic_return is a mean over the last 20 games (cleanrl 209, 245), ours over
# the last 100 (docs/results.md states which statistic each figure is).
DIFFERENCES_CLEANRL = ("reset steps masked", "100-game statistic")

IMPALA_CLEANBA = [
    ("runtime.total_env_steps", 50_000_000, f"{CLEANBA}:60", "total_timesteps: int = 50000000"),
    ("agent.learning_rate", 6e-4, f"{CLEANBA}:62", "learning_rate: float = 0.0006"),
    ("runtime.num_envs", 128, f"{CLEANBA}:64,66",
     "local_num_envs: int = 64 x num_actor_threads: int = 2"),
    ("runtime.unroll_length", 20, f"{CLEANBA}:68", "num_steps: int = 20"),
    ("agent.lr_decay", True, f"{CLEANBA}:70,515-519",
     "anneal_lr: bool = True; frac = 1 - (count // num_minibatches) / num_updates"),
    ("agent.discount", 0.99, f"{CLEANBA}:72", "gamma: float = 0.99"),
    ("agent.num_minibatches", 4, f"{CLEANBA}:74", "num_minibatches: int = 4"),
    ("agent.entropy_cost", 0.01, f"{CLEANBA}:78", "ent_coef: float = 0.01"),
    ("agent.baseline_cost", 0.5, f"{CLEANBA}:80", "vf_coef: float = 0.5"),
    ("agent.vtrace_lambda", 1.0, f"{CLEANBA}:585-587; {RLAX}:168",
     "vtrace_td_error_and_advantage(v_tm1, v_t, rewards, discounts, rhos): lambda_=1.0"),
    ("agent.clip_rho", 1.0, f"{CLEANBA}:585-587; {RLAX}:169",
     "not passed: rlax's clip_rho_threshold=1.0"),
    ("agent.clip_pg_rho", 1.0, f"{CLEANBA}:585-587; {RLAX}:170",
     "not passed: rlax's clip_pg_rho_threshold=1.0"),
    ("agent.optimizer", "rmsprop", f"{CLEANBA}:535-536", "rmsprop_pytorch_style"),
    ("agent.rmsprop_decay", 0.99, f"{CLEANBA}:536", "decay=0.99"),
    ("agent.reward_clip", 1.0, f"{CLEANBA}:129",
     "envpool.make(reward_clip=True): the sign, = [-1, 1] on Atari's integer rewards"),
    ("agent.obs_norm", False, f"{CLEANBA}:118-131,223-224",
     "no observation wrapper; the network divides the frames by 255, nothing more"),
    ("agent.reward_scaling", False, f"{CLEANBA}:118-131", "no reward wrapper"),
    ("runtime.synchronous", False, f"{CLEANBA}:95,330-347",
     "concurrency: bool = True: the actor runs the next rollout while the learner updates"),
    ("shape.on_policy", False, f"{CLEANBA}:95,330-347", "concurrency=True: off-policy data"),
    ("runtime.queue_size", 1, f"{CLEANBA}:656-657",
     "rollout_queues / params_queues: queue.Queue(maxsize=1) per actor thread"),
    ("runtime.actor_device_ids", (0,), f"{CLEANBA}:89", "actor_device_ids = [0]"),
    ("runtime.learner_device_ids", (0,), f"{CLEANBA}:91", "learner_device_ids = [0]"),
    ("runtime.stop_at_return", None, f"{CLEANBA}:676,726-727",
     "trains until num_updates, no early stop"),
    ("env.name", "Breakout-v5", f"{CLEANBA}:58", 'env_id: str = "Breakout-v5"'),
    ("env.episodic_life", False, f"{CLEANBA}:124", "episodic_life=False"),
    ("env.repeat_action_probability", 0.25, f"{CLEANBA}:125", "repeat_action_probability=0.25"),
    ("env.noop_max", 1, f"{CLEANBA}:126", "noop_max=1"),
    ("env.full_action_space", True, f"{CLEANBA}:127", "full_action_space=True"),
    ("env.max_episode_steps", 0, f"{CLEANBA}:113-115,128",
     "max_episode_steps=ATARI_MAX_FRAMES = int(108000 / 4) = 27000 agent steps; 0 here = "
     "EnvPool's default, 27000 (test_envpool_default_episode_limit_is_cleanbas)"),
    ("env.frame_skip", 4, f"{CLEANBA}:120-131; {ENVPOOL}:53", "not set: EnvPool's frame_skip 4"),
    ("env.stack_num", 4, f"{CLEANBA}:120-131; {ENVPOOL}:53", "not set: EnvPool's stack_num 4"),
    ("env.img_size", 84, f"{CLEANBA}:120-131; {ENVPOOL}:56",
     "not set: EnvPool's img_height 84, img_width 84"),
    ("env.options", {}, f"{CLEANBA}:120-131",
     "no other envpool.make argument (EnvPool's gray_scale, use_fire_reset, ... as ours)"),
    ("network.torso", "impala_resnet", f"{CLEANBA}:192-233", "ConvSequence x 3 + Dense 256"),
    ("network.resnet_channels", (16, 32, 32), f"{CLEANBA}:84", "channels: [16, 32, 32]"),
    ("network.torso_kwargs", {}, f"{CLEANBA}:86,229-231",
     "hiddens: [256]: ImpalaResNet's own hidden=256 (checked below), not overridden"),
    ("network.torso_init", "reference", f"{CLEANBA}:199-230",
     "flax's default convs; Dense(256, kernel_init=orthogonal(sqrt 2), bias 0)"),
    ("network.shared_torso", True, f"{CLEANBA}:236-246", "actor and critic on one network"),
    ("network.lstm_size", 0, f"{CLEANBA}:217-232", "feed-forward: no recurrent core"),
]
# What cleanba sets that is no config field here, and is the same: one optimiser step per
# minibatch (gradient_accumulation_steps: int = 1, 76, 539); RMSProp without momentum and with
# nu starting at 0 (174-188: momentum=None, initial_scale=0; optax.rmsprop's defaults); the
# heads orthogonal 0.01 / 1.0 (238, 246; networks/heads.py, actor_critic.py).
# Differences, each said in agents/impala/config.py and docs/results.md, with the resolved
# value (the rule of agents/impala/config.py for 640 samples per gradient step):
# (field, our resolved value, source line, what the reference does there, why ours differs)
DIFFERENCES_CLEANBA = [
    ("agent.max_grad_norm", 40.0 / 640, f"{CLEANBA}:82,534,557-567,591",
     "max_grad_norm: float = 40.0 on a loss summed over each 640-sample minibatch",
     "our loss is a per-sample mean, its gradients 640x smaller: the same clip is 40/640"),
    ("agent.rmsprop_eps", (0.01 / 640) ** 2, f"{CLEANBA}:168,536,557-567,591",
     "eps=0.01 outside the root (g / (sqrt(nu) + eps)), on the summed loss",
     "the per-sample mean (/640) and optax's eps inside the root (squared)"),
    ("agent.bootstrap_truncation", True, f"{CLEANBA}:122,352,375,570",
     "discounts = (1 - dones) * gamma; dones: EnvPool's env_type='gym' done, time limit included",
     "a time-limit truncation bootstraps from V(final obs), the correct target (Pardo et al. "
     "2018); agent.bootstrap_truncation=False gives cleanba's"),
]
# By design, not settings: cleanba masks each episode's first step (382, 571), we mask EnvPool's
# reset step; cleanba's actor waits for each new parameter version (330-347, 658, 699-702:
# exactly one update behind after the first rollout), ours takes the newest at each rollout
# start without waiting
# (sebulba/actor.py: one update behind, at times two; docs/ppo.md); cleanba's
# avg_episodic_return is a mean over one actor thread's envs of each env's latest game (385-388,
# 398, 425), ours over the last 100 games (docs/results.md states which statistic each figure
# is).
BY_DESIGN_CLEANBA = ("reset steps masked", "policy lag 1-2, not exactly 1", "100-game statistic")
# Fields of the IMPALA default that are how the runtime runs, or not read by this config (and
# why): neither a reference setting nor a difference.
_RUNTIME_ONLY_CLEANBA = {
    "agent.adam_eps": "optimizer='rmsprop': not read",
    "agent.obs_clip": "obs_norm=False: nothing to clip",
    "env.num_threads": "EnvPool worker threads, speed only (cleanba passes none, 120-131)",
    "env.workers": "worker processes for Python envs, speed only; EnvPool ids refuse it",
    "env.randomize": "'' (none): the fixed env cleanba trains on",
    "env.scenario_pools": "pools of drawn options, used only with env.randomize ('' above)",
    "env.episode_metrics": "what is logged beside the return, not what is trained",
    "env.action_mask_key": "Atari observations are one array: no mask to find",
    "env.action_mask_empty": "no action mask on Atari: not read",
    "network.torso_sees_mask": "no action mask on Atari: not read",
    "network.mlp_hidden_sizes": "torso='impala_resnet': not read",
    "network.encoders": "torso='impala_resnet': not read (auto only)",
    "network.fusion_sizes": "torso='impala_resnet': not read (auto only)",
    "network.continuous_bounds": "Box actions only; Atari's are Discrete",
    "network.state_dependent_std": "Box actions only",
    "network.init_log_std": "Box actions only",
    "runtime.seed": "a run's choice (cleanba's default seed: 1, line 38)",
    "runtime.num_actor_threads": "the layout that carries num_envs, speed only (issue 29); "
                                 "cleanba's 2 threads x 64 envs (64, 66) are the num_envs row",
    "runtime.actor_overlap": "half-pools stepped in turn, speed only",
    "runtime.stall_warning_s": "a warning", "runtime.join_timeout_s": "shutdown",
    "runtime.max_nonfinite_updates": "a guard: acts only on a non-finite update",
    "runtime.restart_envs_on_error": "recovery from a failing env pool (off)",
    "runtime.max_env_restarts": "recovery from a failing env pool",
    "runtime.compilation_cache_dir": "JAX's compile cache",
}

PPO_MINATAR_PUREJAXRL = [
    ("runtime.num_envs", 64, f"{PUREJAXRL}:333", '"NUM_ENVS": 64'),
    ("runtime.unroll_length", 128, f"{PUREJAXRL}:334", '"NUM_STEPS": 128'),
    ("runtime.total_env_steps", 10_000_000, f"{PUREJAXRL}:335", '"TOTAL_TIMESTEPS": 1e7'),
    ("shape.on_policy", True, f"{PUREJAXRL}:156-180",
     "acts with train_state.params (Anakin always does)"),
    ("agent.learning_rate", 5e-3, f"{PUREJAXRL}:332", '"LR": 5e-3'),
    ("agent.lr_decay", True, f"{PUREJAXRL}:346,126-128",
     '"ANNEAL_LR": True; frac = 1 - (count // (NUM_MINIBATCHES * UPDATE_EPOCHS)) / NUM_UPDATES'),
    ("agent.num_epochs", 4, f"{PUREJAXRL}:336", '"UPDATE_EPOCHS": 4'),
    ("agent.num_minibatches", 8, f"{PUREJAXRL}:337", '"NUM_MINIBATCHES": 8'),
    ("agent.minibatch_axis", "sample", f"{PUREJAXRL}:265-280",
     "permutation of batch_size = MINIBATCH_SIZE * NUM_MINIBATCHES flattened steps"),
    ("agent.shuffle", True, f"{PUREJAXRL}:269", "jax.random.permutation, every epoch"),
    ("agent.discount", 0.99, f"{PUREJAXRL}:338", '"GAMMA": 0.99'),
    ("agent.gae_lambda", 0.95, f"{PUREJAXRL}:339", '"GAE_LAMBDA": 0.95'),
    ("agent.clip_eps", 0.2, f"{PUREJAXRL}:340,236-244", '"CLIP_EPS": 0.2 (ratio clip)'),
    ("agent.value_clip_eps", 0.2, f"{PUREJAXRL}:224-231",
     "value_pred_clipped = value + (v - value).clip(-CLIP_EPS, CLIP_EPS)"),
    ("agent.entropy_cost", 0.01, f"{PUREJAXRL}:341", '"ENT_COEF": 0.01'),
    ("agent.value_cost", 0.5, f"{PUREJAXRL}:342", '"VF_COEF": 0.5'),
    ("agent.max_grad_norm", 0.5, f"{PUREJAXRL}:343,139", '"MAX_GRAD_NORM": 0.5'),
    ("agent.adam_eps", 1e-5, f"{PUREJAXRL}:140", "optax.adam(learning_rate=..., eps=1e-5)"),
    ("agent.normalize_advantages", True, f"{PUREJAXRL}:235",
     "gae = (gae - gae.mean()) / (gae.std() + 1e-8), per minibatch"),
    ("agent.target_kl", 0.0, f"{PUREJAXRL}:290-292", "every epoch runs"),
    ("agent.kl_cost", 0.0, f"{PUREJAXRL}:249-253", "loss: actor + VF_COEF v - ENT_COEF H"),
    ("agent.reward_clip", 0.0, f"{PUREJAXRL}:170-172", "rewards as gymnax returns them"),
    ("agent.bootstrap_truncation", False, f"{PUREJAXRL}:195-198",
     "(1 - done): gymnax's done merges the step limit and the game's end"),
    ("agent.obs_norm", False, f"{PUREJAXRL}:122-124", "FlattenObservation, LogWrapper only"),
    ("agent.reward_scaling", False, f"{PUREJAXRL}:122-124", "no reward wrapper"),
    ("network.torso", "mlp", f"{PUREJAXRL}:78-97", "Dense layers on the flattened grid"),
    ("network.mlp_hidden_sizes", (64, 64), f"{PUREJAXRL}:79,83,92,96", "nn.Dense(64) x 2"),
    ("network.torso_kwargs", {"activation": "relu"}, f"{PUREJAXRL}:344,74-77",
     '"ACTIVATION": "relu"'),
    ("network.torso_init", "reference", f"{PUREJAXRL}:79-96",
     "kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0)"),
    ("network.shared_torso", False, f"{PUREJAXRL}:78-101", "actor and critic torsos apart"),
    ("network.lstm_size", 0, f"{PUREJAXRL}:68-103", "feed-forward"),
]
# By design, not settings: EnvPool's reset step (anakin/envs.py: the step after a game ends
# shows the new game's first observation, its action is ignored and masked out of the loss)
# where gymnax's own step resets within the ending step, so ~1 step per game is spent on it
# here; the heads are orthogonal 0.01 / 1.0 as purejaxrl's (lines 86-88, 99-101); the statistic is a
# mean over the last 100 games here, purejaxrl's figures a mean over the games that ended in
# each update (docs/results.md).


def _value(sections, field: str):
    section, name = field.split(".")
    return getattr(getattr(sections, section), name)


def _read(module, variant, tmp_path):
    config = module.get_config(variant)
    config.run_dir = str(tmp_path / "run")
    return wiring.read(config, devices=False)


ROWS = ([(ppo_atari, "cleanrl", *row) for row in PPO_CLEANRL]
        + [(impala_atari, "default", *row) for row in IMPALA_CLEANBA]
        + [(ppo_minatar, "purejaxrl", *row) for row in PPO_MINATAR_PUREJAXRL])


@pytest.mark.parametrize("module,variant,field,ours,source,theirs", ROWS,
                         ids=[f"{r[1]}-{r[2]}" for r in ROWS])
def test_the_setting_is_the_references(tmp_path, module, variant, field, ours, source, theirs):
    """ppo_atari.py:cleanrl is cleanrl's setting; the IMPALA Atari default cleanba's (bar the
    differences listed below)."""
    assert _value(_read(module, variant, tmp_path), field) == ours, (source, theirs)


def _impala_sections(tmp_path) -> dict:
    """The IMPALA Atari default's sections, its agent resolved (clip and epsilon set)."""
    s = _read(impala_atari, "default", tmp_path)
    return {"agent": s.agent.resolve(samples_per_step(s.agent, s.shape)), "env": s.env,
            "network": s.network, "runtime": s.runtime}


def test_impala_atari_defaults_differences_are_the_stated_ones(tmp_path):
    s = _read(impala_atari, "default", tmp_path)
    assert samples_per_step(s.agent, s.shape) == 640  # cleanba's minibatch: 32 envs x 20
    sections = _impala_sections(tmp_path)
    for field, value, source, theirs, why in DIFFERENCES_CLEANBA:
        section, name = field.split(".")
        assert getattr(sections[section], name) == pytest.approx(value), (field, source, why)


def test_every_impala_field_is_listed_a_difference_or_runtime_only(tmp_path):
    """No field of the IMPALA Atari default's resolved config escapes: each agent, env,
    network and runtime field is checked against cleanba's line above, is a stated difference,
    or is how the runtime runs (with its reason); and no entry names a field that is not."""
    sections = _impala_sections(tmp_path)
    listed = {f for f, *_ in IMPALA_CLEANBA if not f.startswith("shape.")}
    differences = {f for f, *_ in DIFFERENCES_CLEANBA}
    runtime_only = set(_RUNTIME_ONLY_CLEANBA)
    assert not (listed & differences or listed & runtime_only or differences & runtime_only)
    fields = {f"{section}.{f.name}" for section, cfg in sections.items()
              for f in dataclasses.fields(cfg)}
    assert fields - listed - differences - runtime_only == set()
    assert (listed | differences | runtime_only) - fields == set()
    # cleanba's hiddens [256] (86): the ResNet's dense layer, which no config field sets.
    assert torsos.ImpalaResNet.hidden == 256


def test_envpool_default_episode_limit_is_cleanbas():
    """env.max_episode_steps=0 leaves EnvPool's default: 27000 agent steps in the EnvPool
    requirements.txt pins (1.2.5; envpool/atari/registration.py since 0.8.2), cleanba's
    ATARI_MAX_FRAMES (cleanba_impala.py 113-115, 128; its EnvPool 0.8.1 defaulted to 108000,
    hence cleanba set it). cleanrl's row leaves the same default."""
    import envpool
    assert envpool.make_spec("Breakout-v5").config.max_episode_steps == 27000


_NOT_SETTINGS = {  # how the runtime runs, not what it computes
    "agent.loop", "agent.correction", "agent.clip_rho", "agent.clip_pg_rho",
    "agent.value_norm", "agent.value_norm_decay", "agent.obs_clip",
    "env.name", "env.num_threads", "env.workers", "env.options", "env.episode_metrics",
    "env.randomize",  # '' (none): the fixed env of the reference
    "env.scenario_pools",  # used only with env.randomize
    "network.mlp_hidden_sizes", "network.resnet_channels", "network.continuous_bounds",
    "network.state_dependent_std", "network.init_log_std", "network.torso_kwargs",
    "network.encoders", "network.fusion_sizes",  # auto's; these configs name others
    # their envs' observations hold no action mask
    "env.action_mask_key", "env.action_mask_empty", "network.torso_sees_mask"}
# gymnax envs read only env.name and env.options; the EnvPool fields are not used.
_ENVPOOL_ONLY = {f"env.{f.name}" for f in dataclasses.fields(EnvConfig)}


@pytest.mark.parametrize("module,variant,rows", [
    (ppo_atari, "cleanrl", PPO_CLEANRL), (ppo_minatar, "purejaxrl", PPO_MINATAR_PUREJAXRL)],
    ids=["cleanrl", "purejaxrl-minatar"])
def test_every_ppo_config_field_is_listed_or_a_default(tmp_path, module, variant, rows):
    """No field of a reference variant escapes its list: each agent, env and network field is
    listed above or is how the runtime runs (not what it computes)."""
    s = _read(module, variant, tmp_path)
    listed = {f for f, *_ in rows}
    not_settings = _NOT_SETTINGS | (_ENVPOOL_ONLY if module is ppo_minatar else set())
    for section in ("agent", "env", "network"):
        for f in dataclasses.fields(getattr(s, section)):
            key = f"{section}.{f.name}"
            assert key in listed or key in not_settings, key
    # correction: "auto" (or "none") resolves to none for on-policy data: plain PPO.
    assert s.agent.resolve(s.shape.on_policy).correction == "none"
