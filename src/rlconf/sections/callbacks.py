"""``AlgorithmConfig.callbacks()``: the callbacks class (or classes), and Ray 2.40's functions per
hook (``callbacks(on_episode_end=fn)``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.callback_hooks import CALLBACK_HOOKS
from rlconf.field_types import ClassRef, FunctionRef
from rlconf.section import Section

_HOOK = (
    "A function (or list of functions, called in order) run as the {hook} hook, after the "
    "callbacks class's own; it takes the hook's keywords (and **kwargs)."
)


class CallbacksArgs(TypedDict, total=False):
    """The functions per hook (the class is the method's positional argument)."""

    on_algorithm_init: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_algorithm_init")),
    ]
    on_evaluate_start: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_evaluate_start")),
    ]
    on_evaluate_end: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_evaluate_end")),
    ]
    on_env_runners_recreated: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_env_runners_recreated")),
    ]
    on_checkpoint_loaded: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_checkpoint_loaded")),
    ]
    on_environment_created: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_environment_created")),
    ]
    on_episode_created: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_episode_created")),
    ]
    on_episode_start: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_episode_start")),
    ]
    on_episode_step: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_episode_step")),
    ]
    on_episode_end: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_episode_end")),
    ]
    on_sample_end: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_sample_end")),
    ]
    on_train_result: Annotated[
        FunctionRef | list[FunctionRef] | None,
        Field(description=_HOOK.format(hook="on_train_result")),
    ]


class CallbacksFields(CallbacksArgs, total=False):
    callbacks: Annotated[
        ClassRef | list[ClassRef] | None,
        Field(
            description="A DefaultCallbacks (RLlibCallback) subclass, or a list of them whose "
            "hooks run in order; None means runtime.DefaultCallbacks."
        ),
    ]
    callbacks_class: Annotated[
        ClassRef | list[ClassRef] | None,
        Field(description="The callbacks class (or list of classes)."),
    ]


CALLBACKS = Section(
    method="callbacks",
    fields=CallbacksFields,
    positional=("callbacks",),
    doc="Sets the callbacks class whose hooks run during training, and functions per hook.",
    defaults={"callbacks": None, **dict.fromkeys(CALLBACK_HOOKS)},
)
