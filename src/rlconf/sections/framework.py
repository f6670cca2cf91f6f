"""``AlgorithmConfig.framework()``: the deep-learning framework (torch only)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from typing_extensions import TypedDict

from rlconf.section import Section

_TENSORFLOW = {"tf", "tf2", "tfe"}


def _refuse_tensorflow(value: Any) -> Any:
    if isinstance(value, str) and value in _TENSORFLOW:
        raise ValueError(
            f"{value!r} selects TensorFlow, which rlconf does not support: its runtime is torch"
        )
    return value


class FrameworkArgs(TypedDict, total=False):
    """No keyword-only fields: the framework is the method's one positional argument."""


class FrameworkFields(FrameworkArgs, total=False):
    framework: Annotated[
        Literal["torch"],
        BeforeValidator(_refuse_tensorflow),
        Field(
            description="The deep-learning framework. No effect in rlconf: 'torch', the only "
            "accepted value, is what the runtime always uses."
        ),
    ]


FRAMEWORK = Section(
    method="framework",
    fields=FrameworkFields,
    positional=("framework",),
    doc="Sets the deep-learning framework.",
    defaults={"framework": "torch"},
)
