"""PPO hyperparameters (frozen; built from the experiment's ConfigDict at the boundary).

Each default cites its source (table with links: docs/results.md, "Defaults and their sources"):
[R] cleanrl ppo_atari_envpool.py (Huang et al. 2022, github.com/vwxyzjn/cleanrl; "The 37
implementation details of PPO", ICLR blog track 2022); [B] cleanba cleanba_ppo.py (Huang et al.
2023, github.com/vwxyzjn/cleanba), the Sebulba PPO whose layout experiments/configs/ppo_atari.py
follows; [P] Schulman et al. 2017 ("Proximal Policy Optimization Algorithms", arXiv:1707.06347,
Table 5, Atari). Losses are per-sample means in [R], [B] and here, so the values carry over.

Off-policy correction (this codebase's asynchronous mode): V-trace (Espeholt et al. 2018) with
rho and c clipped at 1, computed once per update against the learner's current parameters
([B] runs asynchronous PPO uncorrected).
"""
from __future__ import annotations

import dataclasses

CORRECTIONS = ("auto", "none", "vtrace")
LOOPS = ("scan", "unroll")
MINIBATCH_AXES = ("env", "sample")


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    discount: float = 0.99           # [R] gamma, [B], [P]
    gae_lambda: float = 0.95         # lambda of GAE, and of V-trace's traces when correcting;
                                     # [R], [B], [P]
    clip_eps: float = 0.1            # epsilon of the clipped surrogate, ratio in [1-eps, 1+eps];
                                     # [R] clip_coef, [B], [P] (0.1 x annealed alpha)
    value_clip_eps: float = 0.1      # clip V - V_old to [-eps, eps] in the value loss; 0 disables;
                                     # [R] clip_vloss with clip_coef ([B] does not clip)
    value_cost: float = 0.5          # weight of the value loss; [R] vf_coef, [B]
    entropy_cost: float = 0.01       # weight of the entropy bonus; [R] ent_coef, [B], [P]
    kl_cost: float = 0.0             # weight of a KL(pi_old || pi) penalty; 0 disables; [R], [B]
    target_kl: float = 0.0           # skip remaining epochs after an epoch's KL exceeds it; 0 off;
                                     # [R] target_kl=None
    num_epochs: int = 4              # passes over each rollout batch; [R] update_epochs, [B];
                                     # [P] 3
    num_minibatches: int = 4         # per epoch; splits each device's env columns; [R], [B]
    shuffle: bool = True             # permute env columns before each epoch's split; [R]
    minibatch_axis: str = "env"      # "env": minibatches of whole env columns (sequences kept,
                                     # N devices == 1 device exactly); "sample": of single time
                                     # steps, shuffled (feed-forward nets; PPO paper / cleanrl
                                     # MuJoCo with 1 env)
    normalize_advantages: bool = True  # zero-mean unit-std advantages per minibatch; [R] norm_adv
    reward_clip: float = 1.0         # clip rewards to [-c, c] in the loss; 0 disables; [R], [B]
                                     # (EnvPool reward_clip: sign of integer Atari rewards)
    correction: str = "auto"         # "none" (GAE), "vtrace" (importance-corrected), or "auto":
                                     # vtrace when actors are asynchronous, none when synchronous
    clip_rho: float = 1.0            # V-trace rho-bar (targets)
    clip_pg_rho: float = 1.0         # V-trace clip of the policy-gradient importance weight
    learning_rate: float = 2.5e-4    # [R], [B], [P]
    lr_decay: bool = True            # linear decay to 0 over the run, per update; [R] anneal_lr
    adam_eps: float = 1e-5           # [R] Adam eps=1e-5, [B]
    max_grad_norm: float = 0.5       # global-norm clipping; 0 disables; [R], [B]
    loop: str = "scan"               # epoch/minibatch loop: "scan" (lax.scan, compiles once) or
                                     # "unroll" (Python loop; fast convs on XLA:CPU: docs/ppo.md)
    value_norm: bool = False         # learn values of normalised returns (running mean/std)
    value_norm_decay: float = 0.99   # per-update EMA decay of the return statistics
    obs_norm: bool = False           # normalise observations by running mean/std (learner stats)
    obs_clip: float = 10.0           # clip normalised observations to [-c, c]; 0 disables
    reward_scaling: bool = False     # divide rewards by the running std of the discounted return
    bootstrap_truncation: bool = True  # bootstrap from V(final obs) on a time-limit truncation
                                     # (the correct target: Pardo et al. 2018); False treats it
                                     # as a termination, as [R] and [B] do (`done` merges both)

    def __post_init__(self) -> None:
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction={self.correction!r}; allowed: {CORRECTIONS}.")
        if self.loop not in LOOPS:
            raise ValueError(f"loop={self.loop!r}; allowed: {LOOPS}.")
        if self.minibatch_axis not in MINIBATCH_AXES:
            raise ValueError(f"minibatch_axis={self.minibatch_axis!r}; allowed: "
                             f"{MINIBATCH_AXES}.")
        for name in ("discount", "gae_lambda", "value_norm_decay"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1].")
        for name in ("num_epochs", "num_minibatches"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        for name in ("clip_eps", "clip_rho", "clip_pg_rho", "learning_rate", "adam_eps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive.")
        for name in ("value_clip_eps", "value_cost", "entropy_cost", "kl_cost", "target_kl",
                     "reward_clip", "max_grad_norm", "obs_clip"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 0.")

    def resolve(self, synchronous: bool) -> "PPOConfig":
        """Replaces correction="auto" by the choice for the runtime's mode: on-policy data
        (synchronous actors) needs no correction; stale asynchronous rollouts get V-trace."""
        if self.correction != "auto":
            return self
        return dataclasses.replace(self, correction="none" if synchronous else "vtrace")
