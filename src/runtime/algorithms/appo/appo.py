"""``APPO``: IMPALA's asynchronous pipeline with PPO's clipped surrogate on V-trace advantages
(a target network as the old policy, an optional KL penalty)."""

from __future__ import annotations

from typing import ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.appo import APPOConfig
from runtime.algorithms.appo.learner import APPOLearner
from runtime.algorithms.impala.impala import IMPALA
from runtime.core.learner import Learner
from runtime.core.module import ActorCriticModule, RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_advantages, keep_bootstrap_values


class APPO(IMPALA):
    config_class: ClassVar[type[AlgorithmConfig]] = APPOConfig
    learner_class: ClassVar[type[Learner]] = APPOLearner
    # APPO's config has use_critic (True by default, as the reference).
    module_class: ClassVar[type[RLModule]] = ActorCriticModule
    # GAE advantages for vtrace=False; V-trace computes its own from the kept bootstraps.
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (keep_bootstrap_values, add_advantages)
