"""Small envs of the reference's examples, for partially observed tasks: models with memory
(``use_lstm``, ``use_attention``) solve them, a memoryless model can't."""

from runtime.example_envs.repeat_after_me import RepeatAfterMeEnv
from runtime.example_envs.stateless_cartpole import StatelessCartPole

__all__ = ["RepeatAfterMeEnv", "StatelessCartPole"]
