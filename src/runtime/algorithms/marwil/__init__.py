"""MARWIL: ``marwil.py`` the algorithm, ``module.py`` its module (a critic only with
``beta != 0``), ``learner.py`` its learner, ``loss.py`` its loss. BC is MARWIL with
``beta=0.0`` (``runtime.algorithms.bc``)."""

from runtime.algorithms.marwil.learner import MARWILLearner
from runtime.algorithms.marwil.loss import marwil_loss
from runtime.algorithms.marwil.marwil import MARWIL
from runtime.algorithms.marwil.module import MARWILModule

__all__ = ["MARWIL", "MARWILLearner", "MARWILModule", "marwil_loss"]
