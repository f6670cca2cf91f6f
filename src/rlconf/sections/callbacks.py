"""``AlgorithmConfig.callbacks()``: the callbacks class."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import ClassRef
from rlconf.section import Section


class CallbacksArgs(TypedDict, total=False):
    """No keyword-only fields: the class is the method's one positional argument."""


class CallbacksFields(CallbacksArgs, total=False):
    callbacks: Annotated[
        ClassRef | None,
        Field(description="A DefaultCallbacks subclass; None means runtime.DefaultCallbacks."),
    ]


CALLBACKS = Section(
    method="callbacks",
    fields=CallbacksFields,
    positional=("callbacks",),
    doc="Sets the callbacks class whose hooks run during training.",
    defaults={"callbacks": None},
)
