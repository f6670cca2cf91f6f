"""``AlgorithmConfig.exploration()``: whether and how actions explore."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.exploration_types import ExplorationConfig
from rlconf.section import Section


class ExplorationArgs(TypedDict, total=False):
    explore: Annotated[bool, Field(description="Default of compute_action(s)' explore switch.")]
    exploration_config: Annotated[
        ExplorationConfig,
        Field(description="{'type': built-in name, import path or class, **constructor args}."),
    ]


EXPLORATION = Section(
    method="exploration",
    fields=ExplorationArgs,
    doc="Sets the exploration behaviour.",
    defaults={"explore": True, "exploration_config": {"type": "StochasticSampling"}},
)
