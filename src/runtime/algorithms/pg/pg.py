"""``PG``: vanilla policy gradient on synchronously sampled batches."""

from __future__ import annotations

from typing import ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.pg import PGConfig
from runtime.algorithms.pg.learner import PGLearner
from runtime.core.learner import Learner
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_advantages
from runtime.training.on_policy import OnPolicyAlgorithm


class PG(OnPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = PGConfig
    learner_class: ClassVar[type[Learner]] = PGLearner
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_advantages,)
