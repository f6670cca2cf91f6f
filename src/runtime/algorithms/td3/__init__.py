"""TD3 lives with DDPG (``runtime.algorithms.ddpg``); this package is its registered name."""

from runtime.algorithms.ddpg.td3 import TD3

__all__ = ["TD3"]
