"""PG (REINFORCE): ``pg.py`` the algorithm, ``learner.py`` its learner, ``loss.py`` its loss."""

from runtime.algorithms.pg.learner import PGLearner
from runtime.algorithms.pg.loss import pg_loss
from runtime.algorithms.pg.pg import PG

__all__ = ["PG", "PGLearner", "pg_loss"]
