"""Small envs of the reference's examples: partially observed tasks, which models with memory
(``use_lstm``, ``use_attention``) solve and a memoryless model can't (``RepeatAfterMeEnv``,
``StatelessCartPole``), RLlib's ``MultiAgentCartPole``, and the ``RandomEnv`` family its
memory-leak files train on.

RLlib's example scripts and tuned files import them from ``ray.rllib.examples.env.<module>`` (2.x)
or ``ray.rllib.examples.envs.classes.<module>``; here they are all in this package, and those
paths name them (``rlconf.rllib_example_envs``)."""

from runtime.example_envs.multi_agent_cartpole import MultiAgentCartPole
from runtime.example_envs.random_env import (
    RandomEnv,
    RandomLargeObsSpaceEnv,
    RandomLargeObsSpaceEnvContActions,
)
from runtime.example_envs.repeat_after_me import RepeatAfterMeEnv
from runtime.example_envs.stateless_cartpole import StatelessCartPole

__all__ = [
    "MultiAgentCartPole",
    "RandomEnv",
    "RandomLargeObsSpaceEnv",
    "RandomLargeObsSpaceEnvContActions",
    "RepeatAfterMeEnv",
    "StatelessCartPole",
]
