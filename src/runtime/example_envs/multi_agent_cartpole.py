"""``MultiAgentCartPole``: RLlib's example env of that name (``ray.rllib.examples.envs.classes.
multi_agent``), ``config["num_agents"]`` independent copies of ``CartPole-v1``, agent ids
``0..num_agents-1``."""

from __future__ import annotations

from typing import ClassVar

from runtime.env.multi_agent_env import EnvSource, MultiAgentEnvCopies


class MultiAgentCartPole(MultiAgentEnvCopies):
    """``make_multi_agent("CartPole-v1")`` as a class of this module, so that plain ``pickle``
    carries it by name too. ``MultiAgentCartPole(config={"num_agents": 2})``: two agents, 0 and
    1, each balancing its own pole; an episode's return is the sum of the agents'."""

    env_source: ClassVar[EnvSource | None] = "CartPole-v1"
