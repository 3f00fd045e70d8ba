"""Support module (no tests): the "different head" agent of docs/howto_network.md, registered
under test names, and the same agent without its `greedy_step` (an agent that builds its own
network and leaves greedy play to the config's network, as every agent did before
`Agent.greedy_step` existed)."""
from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax.numpy as jnp

import agents
import networks
from agents import impala

AGENT = "test_wide_head"
AGENT_NO_GREEDY = "test_wide_head_no_greedy"


class WideHeadActorCritic(nn.Module):
    """A hidden layer between the torso and the policy head; a linear value head (its
    parameters do not fit networks.ActorCritic's)."""

    torso: nn.Module
    action_dist: networks.ActionDist
    hidden: int = 16

    @property
    def dist(self) -> networks.ActionDist:
        return self.action_dist

    @nn.compact
    def __call__(self, obs):
        h = self.torso(obs)
        policy = networks.PolicyHead(self.action_dist, name="policy")(
            nn.relu(nn.Dense(self.hidden)(h)))
        return policy, nn.Dense(1)(h)[..., 0].astype(jnp.float32)


def head_of(network) -> WideHeadActorCritic:
    """The network the agents below train, around the configured torso and distribution."""
    return WideHeadActorCritic(torso=network.torso, action_dist=network.dist)


def build(network, agent_config, batch, num_updates):
    return impala.build(head_of(network), agent_config, batch, num_updates)


def build_no_greedy(network, agent_config, batch, num_updates):
    return dataclasses.replace(build(network, agent_config, batch, num_updates),
                               greedy_step=None)


agents.register_agent(AGENT, build, config_cls=impala.ImpalaConfig)
agents.register_agent(AGENT_NO_GREEDY, build_no_greedy, config_cls=impala.ImpalaConfig)
