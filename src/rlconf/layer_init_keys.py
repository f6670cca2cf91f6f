"""The model dict's weight initializer keys (RLlib's ``DefaultModelConfig`` names and RLlib
2.x's): what each takes, the checks between them, and the value a key pair holds.

Each group of layers has a weight (kernel) and a bias initializer, each with its keyword
arguments: ``fcnet`` (the fully connected hidden layers of the network body: ``fcnet_hiddens``
and ``post_fcnet_hiddens``), ``conv`` (the conv layers), ``head_fcnet`` (the output heads:
their ``head_fcnet_hiddens`` layers and the output layers, as RLlib's heads) and ``lstm``. An
initializer is None (the layers' own start: orthogonal weights and zero biases, torch's own for
the LSTM), the name of an in-place ``torch.nn.init`` function (``"orthogonal_"``; without the
trailing ``_`` and in any case too), a function called as ``fn(tensor, **kwargs)``, or the
import path of one (``"torch.nn.init.xavier_uniform_"``; JSON holds a function that way). The
runtime applies them (``runtime.core.layer_init``); this module imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BeforeValidator, Field, WithJsonSchema
from pydantic.fields import FieldInfo

from rlconf import search_space
from rlconf.errors import FieldIssue
from rlconf.importpath import ImportPathError, resolve

#: The in-place initializers of ``torch.nn.init``.
INIT_FUNCTIONS = (
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
)

#: The layer groups, and the layers each names.
LAYER_GROUPS: dict[str, str] = {
    "fcnet": "the network body's fully connected hidden layers (fcnet_hiddens, post_fcnet_hiddens)",
    "conv": "the conv layers",
    "head_fcnet": "the output heads' layers (head_fcnet_hiddens and each output layer: policy, "
    "value, Q)",
    "lstm": "the LSTM (use_lstm)",
}

#: RLlib 2.x's names -> the new API stack's name of the same setting.
RLLIB_2X_NAMES: dict[str, str] = {
    "fcnet_weights_initializer": "fcnet_kernel_initializer",
    "fcnet_weights_initializer_config": "fcnet_kernel_initializer_kwargs",
    "fcnet_bias_initializer_config": "fcnet_bias_initializer_kwargs",
    "conv_kernel_initializer_config": "conv_kernel_initializer_kwargs",
    "conv_bias_initializer_config": "conv_bias_initializer_kwargs",
    "lstm_weights_initializer": "lstm_kernel_initializer",
    "lstm_weights_initializer_config": "lstm_kernel_initializer_kwargs",
    "lstm_bias_initializer_config": "lstm_bias_initializer_kwargs",
}
_2X_NAME_OF = {new: old for old, new in RLLIB_2X_NAMES.items()}

ALLOWED = (
    "None, the name of a torch.nn.init function (one of "
    + ", ".join(INIT_FUNCTIONS)
    + "; the trailing _ optional), a function fn(tensor, **kwargs), or its import path"
)


def initializer_key(group: str, part: str) -> str:
    """``fcnet_kernel_initializer`` (``part`` ``"kernel"``) or ``fcnet_bias_initializer``."""
    return f"{group}_{part}_initializer"


def init_function_name(value: str) -> str | None:
    """The ``torch.nn.init`` function a name means (``"Orthogonal"`` -> ``"orthogonal_"``), or
    None where it names none."""
    name = value.lower()
    name = name if name.endswith("_") else name + "_"
    return name if name in INIT_FUNCTIONS else None


def _check_initializer(value: Any) -> Any:
    if value is None or callable(value):
        return value
    if isinstance(value, str):
        if init_function_name(value) is not None:
            return value
        if "." in value or ":" in value:
            try:
                function = resolve(value)
            except ImportPathError as exc:
                raise ValueError(f"is not an initializer: {exc}") from None
            if callable(function):
                return function
            raise ValueError(f"names a {type(function).__name__}, not a function")
        raise ValueError(f"is not an initializer: no torch.nn.init function {value!r}")
    raise ValueError(f"a {type(value).__name__} is not an initializer")


_INITIALIZER_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "null"},
        {"enum": list(INIT_FUNCTIONS)},
        {"type": "string", "description": "an import path of a function, 'package.module:name'"},
        {
            "type": "object",
            "properties": {"$import": {"type": "string"}},
            "required": ["$import"],
            "additionalProperties": False,
        },
    ]
}

if TYPE_CHECKING:
    Initializer: TypeAlias = str | Callable[..., Any] | None
else:
    Initializer = Annotated[
        Any, BeforeValidator(_check_initializer), WithJsonSchema(_INITIALIZER_SCHEMA)
    ]
InitializerKwargs: TypeAlias = dict[str, Any] | None


def _fields() -> dict[str, FieldInfo]:
    fields: dict[str, FieldInfo] = {}
    for group, layers in LAYER_GROUPS.items():
        for part, what, default in (
            ("kernel", "weights", "orthogonal" if group != "lstm" else "torch's own"),
            ("bias", "biases", "zeros" if group != "lstm" else "torch's own"),
        ):
            key = initializer_key(group, part)
            fields[key] = Field(
                description=f"How the {what} of {layers} start: {ALLOWED}; None: {default}."
            )
            fields[f"{key}_kwargs"] = Field(
                description=f"The keyword arguments {key} is called with ({{'gain': 0.01}})."
            )
    for old, new in RLLIB_2X_NAMES.items():
        fields[old] = Field(description=f"RLlib 2.x's name of {new}: the same setting.")
    return fields


#: The description of each key, by key.
INIT_KEY_FIELDS: dict[str, FieldInfo] = _fields()


def given(model: Mapping[str, Any], key: str) -> Any:
    """The value of ``key`` (a new API stack name), or of its RLlib 2.x name where it is None."""
    value = model.get(key)
    old = _2X_NAME_OF.get(key)
    return model.get(old) if value is None and old is not None else value


def model_init_issues(model: Any) -> list[FieldIssue]:
    """A setting given under both names with different values, and keyword arguments of an
    initializer that is None (the layers' own start takes none)."""
    if not isinstance(model, Mapping):
        return []
    issues: list[FieldIssue] = []
    for old, new in RLLIB_2X_NAMES.items():
        first, second = model.get(old), model.get(new)
        if search_space.is_search_space(first) or search_space.is_search_space(second):
            continue
        if first is not None and second is not None and first != second:
            issues.append(
                FieldIssue(
                    f"model.{old}",
                    f"and model.{new}={second!r} set one setting (RLlib 2.x's name and its new "
                    "API stack's); set one of them",
                    first,
                )
            )
    for group in LAYER_GROUPS:
        for part in ("kernel", "bias"):
            key = initializer_key(group, part)
            kwargs = given(model, f"{key}_kwargs")
            if kwargs and given(model, key) is None:
                issues.append(
                    FieldIssue(
                        f"model.{key}_kwargs",
                        f"are keyword arguments of model.{key}, which is None (the layers' "
                        "own start takes none)",
                        kwargs,
                        allowed=f"None, or an initializer in model.{key}",
                    )
                )
    return issues


def initializers_given(model: Mapping[str, Any]) -> dict[str, Any]:
    """The initializer keys (either name, keyword arguments included) the model dict sets to
    something other than the layers' own start, by key."""
    keys = [
        name
        for group in LAYER_GROUPS
        for part in ("kernel", "bias")
        for name in (initializer_key(group, part), f"{initializer_key(group, part)}_kwargs")
    ]
    keys += list(RLLIB_2X_NAMES)
    return {key: model[key] for key in keys if model.get(key)}


#: The head and initializer keys at the values that ask for nothing (RLlib's defaults; the
#: model dict holds them only where given).
HEAD_AND_INIT_DEFAULTS: dict[str, Any] = {
    "head_fcnet_hiddens": [],
    "head_fcnet_activation": "relu",
    **{key: None for key in INIT_KEY_FIELDS},
}
