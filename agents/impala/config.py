"""IMPALA hyperparameters (frozen; built from the experiment's ConfigDict at the boundary).

Each default cites its source (table with links: docs/results.md, "Defaults and their sources"):
[C] cleanba, the published Sebulba IMPALA (Huang et al. 2023, github.com/vwxyzjn/cleanba,
cleanba/cleanba_impala.py, Args and make_env; its Atari scores are the reference figures);
[S] deepmind/scalable_agent experiment.py, the IMPALA paper's code (Espeholt et al. 2018,
arXiv:1802.01561).

Loss scale: our losses are per-sample means; [C] and [S] sum the loss over each minibatch
(640 samples in [C]: 32 envs x 20 steps). RMSProp's epsilon and the clipping norm are absolute
gradient sizes, so the reference values must be divided by the samples n of a gradient step
(epsilon also squared: optax adds it inside the square root, [C] outside). One rule, applied
wherever the minibatch size is set: with `rmsprop_eps` and `max_grad_norm` left at None (the
default), the builder sets them to (0.01 / n) ** 2 and 40 / n, where n = samples per update /
num_minibatches (the batch is the config's: BatchShape.samples); a number given is kept.
With the reference values taken literally (eps 0.01, clip 40) on a mean loss, the median
parameter's step was ~1% (Nature CNN) to ~11% (ResNet) of RMSProp's normalised step (measured
on Pong frames at init; docs/results.md).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ImpalaConfig:
    discount: float = 0.99         # [C] gamma; [S] discounting
    vtrace_lambda: float = 1.0     # multiplies the trace coefficients c_s; [C] rlax default
    clip_rho: float = 1.0          # rho-bar, clips importance weights in the targets; [C], [S]
    clip_pg_rho: float = 1.0       # clips importance weights in the policy gradient; [C], [S]
    baseline_cost: float = 0.5     # [C] vf_coef; [S] baseline_cost
    entropy_cost: float = 0.01     # [C] ent_coef (Atari; [S]'s 0.00025 is for DMLab)
    reward_clip: float = 1.0       # clip rewards to [-c, c] in the loss; 0 disables; [C]
                                   # (EnvPool reward_clip), [S] abs_one
    optimizer: str = "rmsprop"     # "rmsprop" or "adam"; [C], [S]
    learning_rate: float = 6e-4    # [C] learning_rate
    lr_decay: bool = True          # linear decay to 0 over the run; [C] anneal_lr, [S]
    num_minibatches: int = 1       # gradient steps per update, each on 1/M of every learner
                                   # device's env columns (the lr stays the update's); [C] 4
    rmsprop_decay: float = 0.99    # [C] decay; [S] decay
    rmsprop_eps: float | None = None  # None: (0.01 / n) ** 2 for n samples per gradient step,
                                   # [C]'s eps=0.01 outside the sqrt of a loss summed over its
                                   # minibatch, inside ours of a mean (docstring); or as given
    adam_eps: float = 1e-8         # optax default (optimizer="adam" only)
    max_grad_norm: float | None = None  # global-norm clipping; None: 40 / n, [C]'s 40 on a
                                   # summed loss (docstring); 0 disables; or as given
    obs_norm: bool = False         # normalise observations by running mean/std (learner stats)
    obs_clip: float = 10.0         # clip normalised observations to [-c, c]; 0 disables
    reward_scaling: bool = False   # divide rewards by the running std of the discounted return
    bootstrap_truncation: bool = True  # bootstrap from V(final obs) on a time-limit truncation
                                   # (the correct target: Pardo et al. 2018); False treats it
                                   # as a termination, as [C] does (its `dones` merge both)
    def __post_init__(self) -> None:
        if self.optimizer not in ("rmsprop", "adam"):
            raise ValueError(f"optimizer={self.optimizer!r}; allowed: 'rmsprop', 'adam'.")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount={self.discount} must be in [0, 1].")
        if not 0.0 <= self.vtrace_lambda <= 1.0:
            raise ValueError(f"vtrace_lambda={self.vtrace_lambda} must be in [0, 1].")
        if not isinstance(self.num_minibatches, int) or self.num_minibatches < 1:
            raise ValueError(f"num_minibatches={self.num_minibatches!r} must be an int >= 1.")
        for name in ("clip_rho", "clip_pg_rho", "learning_rate"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive.")
        for name in ("baseline_cost", "entropy_cost", "reward_clip", "obs_clip"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 0.")
        for name in ("max_grad_norm", "rmsprop_eps"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name}={value} must be >= 0, or None (the rule from the "
                                 f"minibatch size).")

    def resolve(self, samples_per_step: int) -> "ImpalaConfig":
        """The config with `rmsprop_eps` and `max_grad_norm` set by the rule of the module
        docstring for `samples_per_step` samples per gradient step, where they are None."""
        if self.resolved:
            return self
        n = samples_per_step
        return dataclasses.replace(
            self, rmsprop_eps=(0.01 / n) ** 2 if self.rmsprop_eps is None else self.rmsprop_eps,
            max_grad_norm=40.0 / n if self.max_grad_norm is None else self.max_grad_norm)

    @property
    def resolved(self) -> bool:
        return self.rmsprop_eps is not None and self.max_grad_norm is not None
