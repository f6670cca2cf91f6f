"""``PPO``: proximal policy optimisation on synchronously sampled batches with GAE."""

from __future__ import annotations

from typing import ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.ppo import PPOConfig
from runtime.algorithms.ppo.learner import PPOLearner
from runtime.core.learner import Learner
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_advantages
from runtime.training.on_policy import OnPolicyAlgorithm


class PPO(OnPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = PPOConfig
    learner_class: ClassVar[type[Learner]] = PPOLearner
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_advantages,)
