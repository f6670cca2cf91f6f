"""PPO: ``ppo.py`` the algorithm, ``learner.py`` its learner, ``loss.py`` its loss."""

from runtime.algorithms.ppo.learner import PPOLearner
from runtime.algorithms.ppo.loss import ppo_loss
from runtime.algorithms.ppo.ppo import PPO

__all__ = ["PPO", "PPOLearner", "ppo_loss"]
