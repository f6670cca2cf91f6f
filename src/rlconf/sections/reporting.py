"""``AlgorithmConfig.reporting()``: metrics smoothing and the length of a train() call."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import NonNegFloat, NonNegInt, PosInt
from rlconf.section import Section


class ReportingArgs(TypedDict, total=False):
    metrics_episode_collection_timeout_s: Annotated[
        NonNegFloat,
        Field(
            description="Wait at most this long for workers' episode metrics. No effect in "
            "rlconf: episode metrics come back with each sample() call, never waited for."
        ),
    ]
    metrics_num_episodes_for_smoothing: Annotated[
        PosInt, Field(description="Episode metrics are averaged over this many episodes.")
    ]
    min_time_s_per_reporting: Annotated[
        NonNegFloat | None, Field(description="Repeat training steps until this many seconds.")
    ]
    min_train_timesteps_per_reporting: Annotated[
        NonNegInt | None, Field(description="Repeat training steps until this many trained steps.")
    ]
    min_sample_timesteps_per_reporting: Annotated[
        NonNegInt | None, Field(description="Repeat training steps until this many sampled steps.")
    ]

    # RLlib's names of the min_*_per_reporting keys (rlconf.key_aliases): keywords that set
    # them, typed as them, not fields.
    min_time_s_per_iteration: NonNegFloat | None
    min_train_timesteps_per_iteration: NonNegInt | None
    min_sample_timesteps_per_iteration: NonNegInt | None


REPORTING = Section(
    method="reporting",
    fields=ReportingArgs,
    doc="Sets how metrics are smoothed and how much work one train() call does.",
    defaults={
        "metrics_episode_collection_timeout_s": 180.0,
        "metrics_num_episodes_for_smoothing": 100,
        "min_time_s_per_reporting": None,
        "min_train_timesteps_per_reporting": None,
        "min_sample_timesteps_per_reporting": None,
    },
)
