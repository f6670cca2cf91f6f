"""Exploration strategies, one module each, and the factory that builds one from
``exploration_config``."""

from runtime.core.exploration.epsilon_greedy import EpsilonGreedy
from runtime.core.exploration.exploration import Exploration
from runtime.core.exploration.factory import (
    BUILTIN,
    NOT_AVAILABLE,
    build_exploration,
    check_exploration,
    exploration_class,
)
from runtime.core.exploration.per_worker_epsilon_greedy import PerWorkerEpsilonGreedy
from runtime.core.exploration.random_actions import Random
from runtime.core.exploration.soft_q import SoftQ
from runtime.core.exploration.stochastic_sampling import StochasticSampling

__all__ = [
    "BUILTIN",
    "NOT_AVAILABLE",
    "EpsilonGreedy",
    "Exploration",
    "PerWorkerEpsilonGreedy",
    "Random",
    "SoftQ",
    "StochasticSampling",
    "build_exploration",
    "check_exploration",
    "exploration_class",
]
