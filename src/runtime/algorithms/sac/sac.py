"""``SAC``: soft actor-critic on the off-policy training step (sample, store, replay, learn,
update the target Q-networks, sync)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.sac import SACConfig
from runtime.algorithms.sac.learner import SACLearner
from runtime.algorithms.sac.module import SACModule
from runtime.core.learner import Learner
from runtime.core.module import RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_n_step_returns
from runtime.core.space_support import SpaceTypes
from runtime.training.off_policy import OffPolicyAlgorithm


class SAC(OffPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = SACConfig
    learner_class: ClassVar[type[Learner]] = SACLearner
    module_class: ClassVar[type[RLModule]] = SACModule
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_n_step_returns,)
    explorations: ClassVar[tuple[str, ...]] = ("StochasticSampling", "Random")
    #: A squashed Gaussian over Box actions, a categorical over Discrete ones.
    action_spaces: ClassVar[SpaceTypes] = (gym.spaces.Box, gym.spaces.Discrete)
