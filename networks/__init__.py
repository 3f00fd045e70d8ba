"""Flax (linen) networks for the Sebulba/IMPALA agents.

Torsos turn observations into an embedding; `ActorCritic` adds the policy
and value heads on top. Pixel torsos take raw uint8 EnvPool frames and do
the scaling/layout conversion themselves so callers never preprocess.
"""

from networks.actor_critic import ActorCritic
from networks.torsos import MLP, ImpalaResNet, NatureCNN, TORSOS, make_torso

__all__ = ["ActorCritic", "ImpalaResNet", "MLP", "NatureCNN", "TORSOS", "make_torso"]
