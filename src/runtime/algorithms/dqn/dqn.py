"""``DQN``: deep Q-learning on the off-policy training step (sample, store, replay, learn,
update the target network, sync)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.dqn import DQNConfig
from runtime.algorithms.dqn.learner import DQNLearner
from runtime.algorithms.dqn.module import QModule
from runtime.core.learner import Learner
from runtime.core.module import RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_n_step_returns
from runtime.core.space_support import SpaceTypes
from runtime.training.off_policy import OffPolicyAlgorithm


class DQN(OffPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = DQNConfig
    learner_class: ClassVar[type[Learner]] = DQNLearner
    module_class: ClassVar[type[RLModule]] = QModule
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_n_step_returns,)
    explorations: ClassVar[tuple[str, ...]] = (
        "EpsilonGreedy",
        "PerWorkerEpsilonGreedy",
        "SoftQ",
        "ParameterNoise",
        "StochasticSampling",
        "Random",
    )
    #: One Q-value per action. Checked where each policy is made: a ConfigError at build,
    #: from remote workers too.
    action_spaces: ClassVar[SpaceTypes] = (gym.spaces.Discrete,)
