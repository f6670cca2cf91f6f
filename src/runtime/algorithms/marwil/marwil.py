"""``MARWIL``: advantage-weighted imitation, synchronous: each training step reads (or samples)
``train_batch_size`` env steps, their discounted returns added by ``add_returns`` as the rows
are read, takes one gradient step on them and sends the weights out (``OnPolicyAlgorithm``'s
step, the reference's MARWIL step)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.marwil import MARWILConfig
from runtime.algorithms.marwil.learner import MARWILLearner
from runtime.algorithms.marwil.module import MARWILModule
from runtime.core.learner import Learner
from runtime.core.module import RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_returns
from runtime.core.space_support import SpaceTypes
from runtime.training.on_policy import OnPolicyAlgorithm


class MARWIL(OnPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = MARWILConfig
    learner_class: ClassVar[type[Learner]] = MARWILLearner
    module_class: ClassVar[type[RLModule]] = MARWILModule
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_returns,)
    action_spaces: ClassVar[SpaceTypes] = (
        gym.spaces.Discrete,
        gym.spaces.Box,
        gym.spaces.MultiDiscrete,
    )
