"""``A2CConfig``: synchronous advantage actor-critic."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import (
    ActorCriticArgs,
    GradClipArgs,
    LRScheduleArgs,
    critic_issues,
)
from rlconf.errors import FieldIssue
from rlconf.field_types import PosInt
from rlconf.fluent import NOT_SET
from rlconf.generated.a2c_fluent import A2CConfigFluent
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs


class A2CTrainingArgs(TrainingArgs, ActorCriticArgs, LRScheduleArgs, GradClipArgs, total=False):
    microbatch_size: Annotated[
        PosInt | None,
        Field(
            description="Accumulate gradients over microbatches of this size, one optimizer "
            "step per train batch; None: one pass over the whole batch."
        ),
    ]


A2C_TRAINING: Section = TRAINING.with_fields(
    A2CTrainingArgs,
    {
        "use_critic": True,
        "use_gae": True,
        "lambda_": 1.0,
        "vf_loss_coeff": 0.5,
        "entropy_coeff": 0.01,
        "entropy_coeff_schedule": None,
        "lr_schedule": None,
        "grad_clip": 40.0,
        "microbatch_size": None,
    },
)


class A2CConfig(A2CConfigFluent, AlgorithmConfig):
    """Config of A2C: synchronous advantage actor-critic on batches from all workers."""

    __slots__ = ()
    algo_name = "A2C"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": A2C_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "rollout_fragment_length": 20,
        "train_batch_size": 200,
        "min_time_s_per_reporting": 10.0,
        "sample_async": False,
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        v = self._plain
        micro, train = v("microbatch_size"), v("train_batch_size")
        if micro not in (None, NOT_SET) and train is not NOT_SET and micro > train:
            issues.append(
                FieldIssue(
                    "microbatch_size",
                    f"must be <= train_batch_size ({train})",
                    micro,
                )
            )
        issues.extend(critic_issues(v))
        return issues
