"""SAC: ``sac.py`` the algorithm, ``module.py`` its policy, Q-networks and entropy coefficient,
``learner.py`` its learner (three optimizers), ``loss.py`` its losses."""

from runtime.algorithms.sac.learner import SACLearner
from runtime.algorithms.sac.loss import sac_loss
from runtime.algorithms.sac.module import SACModule
from runtime.algorithms.sac.sac import SAC

__all__ = ["SAC", "SACLearner", "SACModule", "sac_loss"]
