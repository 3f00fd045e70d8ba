"""Flax (linen) actor-critic networks, for any agent and either runtime (Sebulba, Anakin).

Torsos turn observations into an embedding; `ActorCritic` adds the policy
head (networks/heads.py, for the action distributions of networks/distributions.py) and the
value head on top; `RecurrentActorCritic` puts an LSTM core (networks/cores.py) in between
(docs/recurrent.md); `auto` gives each leaf of a dict observation its own encoder
(networks/encoders.py). Pixel torsos take raw uint8 EnvPool frames and do the scaling/layout
conversion themselves so callers never preprocess. `NetworkConfig` is the schema of an
experiment's `config.network` section and `build_network` builds it (networks/config.py).
"""

from networks.actor_critic import ActorCritic, RecurrentActorCritic, is_recurrent
from networks.config import NetworkConfig, build_network
from networks.cores import LSTMCore
from networks.distributions import (ActionDist, Categorical, DiagGaussian, Joint,
                                    MultiCategorical, from_space)
from networks.encoders import MultiInput
from networks.heads import PolicyHead
from networks.torsos import (MLP, TORSOS, ImpalaResNet, MinAtarCNN, NatureCNN, is_gpu_sized,
                             make_torso, register_torso)

__all__ = ["ActionDist", "ActorCritic", "Categorical", "DiagGaussian", "ImpalaResNet", "Joint",
           "LSTMCore", "MLP", "MinAtarCNN", "MultiCategorical", "MultiInput", "NatureCNN",
           "NetworkConfig", "PolicyHead",
           "RecurrentActorCritic", "TORSOS", "build_network", "from_space", "is_gpu_sized",
           "is_recurrent", "make_torso", "register_torso"]
