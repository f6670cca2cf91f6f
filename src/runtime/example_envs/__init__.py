"""Small envs of the reference's examples: partially observed tasks, which models with memory
(``use_lstm``, ``use_attention``) solve and a memoryless model can't (``RepeatAfterMeEnv``,
``StatelessCartPole``), and RLlib's ``MultiAgentCartPole``.

RLlib's example scripts import them from ``ray.rllib.examples.envs.classes.stateless_cartpole``
and ``ray.rllib.examples.envs.classes.multi_agent``; here they are all in this package."""

from runtime.example_envs.multi_agent_cartpole import MultiAgentCartPole
from runtime.example_envs.repeat_after_me import RepeatAfterMeEnv
from runtime.example_envs.stateless_cartpole import StatelessCartPole

__all__ = ["MultiAgentCartPole", "RepeatAfterMeEnv", "StatelessCartPole"]
