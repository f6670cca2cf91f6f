"""Exploration strategies, one module each, and the factory that builds one from
``exploration_config``."""

from runtime.core.exploration.exploration import Exploration
from runtime.core.exploration.factory import (
    BUILTIN,
    build_exploration,
    check_exploration,
    exploration_class,
)
from runtime.core.exploration.random_actions import Random
from runtime.core.exploration.stochastic_sampling import StochasticSampling

__all__ = [
    "BUILTIN",
    "Exploration",
    "Random",
    "StochasticSampling",
    "build_exploration",
    "check_exploration",
    "exploration_class",
]
