"""IMPALA: ``impala.py`` the algorithm (``runtime.training.async_training``'s step),
``learner.py`` its learner, ``loss.py`` its loss, ``vtrace.py`` V-trace and the time-major
layout of a batch, ``module.py`` its module (the critic always on)."""

from runtime.algorithms.impala.impala import IMPALA
from runtime.algorithms.impala.learner import IMPALALearner
from runtime.algorithms.impala.loss import impala_loss
from runtime.algorithms.impala.vtrace import (
    VALUES_BOOTSTRAPPED,
    TimeMajor,
    VTraceReturns,
    time_major_layout,
    vtrace_returns,
)

__all__ = [
    "IMPALA",
    "IMPALALearner",
    "VALUES_BOOTSTRAPPED",
    "TimeMajor",
    "VTraceReturns",
    "impala_loss",
    "time_major_layout",
    "vtrace_returns",
]
