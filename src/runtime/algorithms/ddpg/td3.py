"""``TD3``: twin delayed DDPG: DDPG's training step and networks with ``TD3Config``'s defaults
(twin critics, delayed actor updates, target-policy smoothing, Gaussian exploration)."""

from __future__ import annotations

from typing import ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.td3 import TD3Config
from runtime.algorithms.ddpg.ddpg import DDPG


class TD3(DDPG):
    config_class: ClassVar[type[AlgorithmConfig]] = TD3Config
