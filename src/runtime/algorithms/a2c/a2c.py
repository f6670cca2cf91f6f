"""``A2C``: synchronous advantage actor-critic on batches from all workers."""

from __future__ import annotations

from typing import ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.a2c import A2CConfig
from runtime.algorithms.a2c.learner import A2CLearner
from runtime.core.learner import Learner
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_advantages
from runtime.training.on_policy import OnPolicyAlgorithm


class A2C(OnPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = A2CConfig
    learner_class: ClassVar[type[Learner]] = A2CLearner
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_advantages,)
