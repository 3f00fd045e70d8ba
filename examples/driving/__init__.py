"""Bring your own environment and network: a driving task with a multi-tensor observation and
mixed continuous + discrete controls, trained with the library's PPO and IMPALA.

Importing this package registers
- the environment `Driving-v0` (examples/driving/env.py) with sebulba.registry.register_env;
- the torso `driving_net` (examples/driving/network.py) with networks.register_torso;
after which any experiment main runs them by name: `--config.env.name=Driving-v0
--config.network.torso=driving_net`. Commands and results: examples/driving/README.md.
"""
import networks
from examples.driving.env import DrivingEnv, make_driving_env
from examples.driving.network import DrivingTorso
from sebulba.registry import register_env

ENV_NAME = "Driving-v0"
TORSO_NAME = "driving_net"

register_env(ENV_NAME, make_driving_env)
networks.register_torso(TORSO_NAME, DrivingTorso)

__all__ = ["DrivingEnv", "DrivingTorso", "ENV_NAME", "TORSO_NAME", "make_driving_env"]
