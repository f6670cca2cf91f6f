"""``DDPG``: deep deterministic policy gradient on the off-policy training step (sample, store,
replay, learn, update the target networks, sync)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.ddpg import DDPGConfig
from runtime.algorithms.ddpg.learner import DDPGLearner
from runtime.algorithms.ddpg.module import DDPGModule
from runtime.core.learner import Learner
from runtime.core.module import RLModule
from runtime.core.policy import Postprocessor
from runtime.core.postprocessing import add_n_step_returns
from runtime.core.space_support import SpaceTypes
from runtime.training.off_policy import OffPolicyAlgorithm

#: Noise added to a deterministic actor's actions (and, for testing a policy, plain sampling
#: or uniformly random actions).
NOISE_EXPLORATIONS: tuple[str, ...] = (
    "OrnsteinUhlenbeckNoise",
    "PerWorkerOrnsteinUhlenbeckNoise",
    "GaussianNoise",
    "PerWorkerGaussianNoise",
    "ParameterNoise",
    "StochasticSampling",
    "Random",
)


class DDPG(OffPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = DDPGConfig
    learner_class: ClassVar[type[Learner]] = DDPGLearner
    module_class: ClassVar[type[RLModule]] = DDPGModule
    postprocessing: ClassVar[tuple[Postprocessor, ...]] = (add_n_step_returns,)
    explorations: ClassVar[tuple[str, ...]] = NOISE_EXPLORATIONS
    #: A deterministic actor over a Box (a Discrete space is refused at build: use SAC or DQN).
    action_spaces: ClassVar[SpaceTypes] = (gym.spaces.Box,)
