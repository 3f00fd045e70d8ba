"""Trains PPO on EnvPool Atari, or any EnvPool task with another config (any action space;
experiments/ppo_mujoco.py has the MuJoCo defaults).

    python experiments/ppo_atari.py --config=experiments/configs/ppo_atari.py \
        --config.env.name=Pong-v5 --config.synchronous=True

`config.synchronous` picks the mode: True gives on-policy PPO (policy lag 0); False lets actors
run ahead, and `agent.correction="auto"` then corrects stale rollouts with V-trace. The agent
is agents/ppo (its `SPEC`: config, minibatch checks, builder); this file only names it.
"""
import functools
import os

from experiments import wiring

# `run(config, make_env=None, **kwargs)`: as experiments/impala_atari.py.
run = functools.partial(wiring.run, agent="ppo")

if __name__ == "__main__":
    wiring.cli(run, os.path.join(os.path.dirname(__file__), "configs", "ppo_atari.py"))
