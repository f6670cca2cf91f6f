"""A2C: ``a2c.py`` the algorithm, ``learner.py`` its learner, ``loss.py`` its loss."""

from runtime.algorithms.a2c.a2c import A2C
from runtime.algorithms.a2c.learner import A2CLearner
from runtime.algorithms.a2c.loss import a2c_loss

__all__ = ["A2C", "A2CLearner", "a2c_loss"]
