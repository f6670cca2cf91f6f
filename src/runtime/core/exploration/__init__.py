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
    policy_action_space,
)
from runtime.core.exploration.gaussian_noise import GaussianNoise
from runtime.core.exploration.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise
from runtime.core.exploration.parameter_noise import ParameterNoise
from runtime.core.exploration.per_worker_epsilon_greedy import PerWorkerEpsilonGreedy
from runtime.core.exploration.per_worker_noise import (
    PerWorkerGaussianNoise,
    PerWorkerOrnsteinUhlenbeckNoise,
)
from runtime.core.exploration.random_actions import Random
from runtime.core.exploration.soft_q import SoftQ
from runtime.core.exploration.stochastic_sampling import StochasticSampling

__all__ = [
    "BUILTIN",
    "NOT_AVAILABLE",
    "EpsilonGreedy",
    "Exploration",
    "GaussianNoise",
    "OrnsteinUhlenbeckNoise",
    "ParameterNoise",
    "PerWorkerEpsilonGreedy",
    "PerWorkerGaussianNoise",
    "PerWorkerOrnsteinUhlenbeckNoise",
    "Random",
    "SoftQ",
    "StochasticSampling",
    "build_exploration",
    "check_exploration",
    "exploration_class",
    "policy_action_space",
]
