"""``IMPALA``: asynchronous actor-learner training with V-trace (``AsyncAlgorithm``'s step:
workers sample continuously, a learner thread trains on what arrives, weights are broadcast
to the workers whose samples were used)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.impala import IMPALAConfig
from runtime.algorithms.impala.learner import IMPALALearner
from runtime.algorithms.impala.module import IMPALAModule
from runtime.core.learner import Learner
from runtime.core.module import RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import keep_bootstrap_values
from runtime.core.space_support import SpaceTypes
from runtime.training.async_training import AsyncAlgorithm


class IMPALA(AsyncAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = IMPALAConfig
    learner_class: ClassVar[type[Learner]] = IMPALALearner
    module_class: ClassVar[type[RLModule]] = IMPALAModule
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (keep_bootstrap_values,)
    action_spaces: ClassVar[SpaceTypes] = (
        gym.spaces.Discrete,
        gym.spaces.Box,
        gym.spaces.MultiDiscrete,
    )
