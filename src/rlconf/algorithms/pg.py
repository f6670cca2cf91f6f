"""``PGConfig``: vanilla policy gradient (REINFORCE)."""

from __future__ import annotations

from typing import Any, ClassVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import LRScheduleArgs
from rlconf.generated.pg_fluent import PGConfigFluent
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class PGTrainingArgs(TrainingArgs, LRScheduleArgs, total=False):
    """PG's training fields: the common ones and an lr schedule."""


PG_TRAINING: Section = TRAINING.with_fields(PGTrainingArgs, {"lr_schedule": None})


class PGConfig(PGConfigFluent, AlgorithmConfig):
    """Config of PG: REINFORCE with discounted returns."""

    __slots__ = ()
    algo_name = "PG"
    _sections: ClassVar[dict[str, Section]] = {**AlgorithmConfig._sections, "training": PG_TRAINING}
    _algo_defaults: ClassVar[dict[str, Any]] = {"num_workers": 0, "lr": 0.0004}
