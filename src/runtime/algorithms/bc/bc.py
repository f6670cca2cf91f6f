"""``BC``: behaviour cloning, MARWIL with ``BCConfig`` (``beta=0.0``: every recorded action
weighs the same, no value function)."""

from __future__ import annotations

from typing import ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.bc import BCConfig
from runtime.algorithms.marwil.marwil import MARWIL


class BC(MARWIL):
    config_class: ClassVar[type[AlgorithmConfig]] = BCConfig
