"""DQN: ``dqn.py`` the algorithm, ``module.py`` its Q-network, ``learner.py`` its learner,
``loss.py`` its loss."""

from runtime.algorithms.dqn.dqn import DQN
from runtime.algorithms.dqn.learner import DQNLearner
from runtime.algorithms.dqn.loss import dqn_loss
from runtime.algorithms.dqn.module import QModule

__all__ = ["DQN", "DQNLearner", "QModule", "dqn_loss"]
