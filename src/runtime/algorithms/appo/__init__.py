"""APPO: ``appo.py`` the algorithm (IMPALA's pipeline), ``learner.py`` its learner (target
network, adaptive KL), ``loss.py`` its loss (V-trace from ``runtime.algorithms.impala``)."""

from runtime.algorithms.appo.appo import APPO
from runtime.algorithms.appo.learner import APPOLearner
from runtime.algorithms.appo.loss import appo_loss

__all__ = ["APPO", "APPOLearner", "appo_loss"]
