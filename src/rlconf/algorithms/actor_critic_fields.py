"""Training fields shared by the policy-gradient family (declared once, used by PPO, A2C, PG,
IMPALA, APPO)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.errors import FieldIssue
from rlconf.field_types import NonNegFloat, PosFloat, Schedule, UnitFloat


class LRScheduleArgs(TypedDict, total=False):
    lr_schedule: Annotated[
        Schedule | None,
        Field(description="Piecewise-linear lr over timesteps: [[t, lr], ...]; overrides lr."),
    ]


class GradClipArgs(TypedDict, total=False):
    grad_clip: Annotated[
        PosFloat | None, Field(description="Clip the global gradient norm to this; None: off.")
    ]


class CriticArgs(TypedDict, total=False):
    use_critic: Annotated[
        bool, Field(description="Learn a value function as a baseline for advantages.")
    ]
    use_gae: Annotated[
        bool, Field(description="Use generalised advantage estimation (needs the critic).")
    ]
    lambda_: Annotated[UnitFloat, Field(description="GAE lambda.")]


class LossCoeffArgs(TypedDict, total=False):
    """The weights of an actor-critic loss's value and entropy terms (IMPALA has these without
    ``CriticArgs``: its advantages come from V-trace)."""

    vf_loss_coeff: Annotated[NonNegFloat, Field(description="Weight of the value loss.")]
    entropy_coeff: Annotated[NonNegFloat, Field(description="Weight of the entropy bonus.")]
    entropy_coeff_schedule: Annotated[
        Schedule | None,
        Field(description="Piecewise-linear entropy_coeff over timesteps: [[t, coeff], ...]."),
    ]


class KLPenaltyArgs(TypedDict, total=False):
    kl_coeff: Annotated[NonNegFloat, Field(description="Initial weight of the KL penalty.")]
    kl_target: Annotated[PosFloat, Field(description="KL divergence the penalty adapts to.")]


class ActorCriticArgs(CriticArgs, LossCoeffArgs, total=False):
    """The critic and the loss weights of the policy-gradient family (PPO, A2C, PG, APPO)."""


def critic_issues(value_of: Callable[[str], Any]) -> list[FieldIssue]:
    """GAE needs the critic's value estimates."""
    if value_of("use_gae") is True and value_of("use_critic") is False:
        return [
            FieldIssue(
                "use_critic",
                "False can't be combined with use_gae=True (GAE needs the "
                "critic's value estimates)",
                False,
            )
        ]
    return []
