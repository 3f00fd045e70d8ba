"""IMPALA hyperparameters (frozen; built from the experiment's ConfigDict at the boundary).

Defaults follow Espeholt et al. 2018 ("IMPALA", arXiv:1802.01561, Table G.1 / appendix D for
Atari) and the widely used public Sebulba implementation cleanba (Huang et al. 2023,
github.com/vwxyzjn/cleanba, cleanba_impala.py): discount 0.99, baseline cost 0.5, entropy cost
0.01, RMSProp (decay 0.99, epsilon 0.01), learning rate 6e-4 linearly decayed to 0, global-norm
clipping at 40, rewards clipped to [-1, 1], rho and c clipped at 1.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ImpalaConfig:
    discount: float = 0.99
    vtrace_lambda: float = 1.0     # multiplies the trace coefficients c_s
    clip_rho: float = 1.0          # rho-bar, clips importance weights in the targets
    clip_pg_rho: float = 1.0       # clips importance weights in the policy gradient
    baseline_cost: float = 0.5
    entropy_cost: float = 0.01
    reward_clip: float = 1.0       # clip rewards to [-c, c] in the loss; 0 disables
    optimizer: str = "rmsprop"     # "rmsprop" or "adam"
    learning_rate: float = 6e-4
    lr_decay: bool = True          # linear decay to 0 over the run
    rmsprop_decay: float = 0.99
    rmsprop_eps: float = 0.01
    adam_eps: float = 1e-8
    max_grad_norm: float = 40.0    # global-norm clipping; 0 disables
    obs_norm: bool = False         # normalise observations by running mean/std (learner stats)
    obs_clip: float = 10.0         # clip normalised observations to [-c, c]; 0 disables
    reward_scaling: bool = False   # divide rewards by the running std of the discounted return

    def __post_init__(self) -> None:
        if self.optimizer not in ("rmsprop", "adam"):
            raise ValueError(f"optimizer={self.optimizer!r}; allowed: 'rmsprop', 'adam'.")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount={self.discount} must be in [0, 1].")
        if not 0.0 <= self.vtrace_lambda <= 1.0:
            raise ValueError(f"vtrace_lambda={self.vtrace_lambda} must be in [0, 1].")
        for name in ("clip_rho", "clip_pg_rho", "learning_rate"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive.")
        for name in ("baseline_cost", "entropy_cost", "reward_clip", "max_grad_norm",
                     "obs_clip"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 0.")
