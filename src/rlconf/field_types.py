"""Annotated types shared by the config sections.

Each alias carries its runtime check (pydantic metadata) and the JSON Schema of its JSON form.
Under ``TYPE_CHECKING`` some aliases are the plain types a user passes, so mypy checks user
code against them; at runtime the same names add validators that need no heavy import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from rlconf.importpath import ImportPathError, resolve
from rlconf.spaces import is_space

T = TypeVar("T")

_IMPORT_PATH_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "description": "import path, 'package.module:Name'"},
        {
            "type": "object",
            "properties": {"$import": {"type": "string"}},
            "required": ["$import"],
            "additionalProperties": False,
        },
    ]
}


def _resolve_path(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return resolve(value)
        except ImportPathError as exc:
            raise ValueError(str(exc)) from None
    return value


def _must_be_class(value: Any) -> Any:
    value = _resolve_path(value)
    if not isinstance(value, type):
        raise ValueError(f"expected a class, got a {type(value).__name__}")
    return value


def _must_be_callable(value: Any) -> Any:
    value = _resolve_path(value)
    if not callable(value):
        raise ValueError(f"expected a function, got a {type(value).__name__}")
    return value


def _must_be_space(value: Any) -> Any:
    if not is_space(value):
        raise ValueError(f"expected a gymnasium.spaces.Space, got a {type(value).__name__}")
    return value


def _sequence_to_list(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _check_schedule(points: list[list[float]]) -> list[list[float]]:
    for point in points:
        if len(point) != 2:
            raise ValueError("each schedule point is a [timestep, value] pair")
    steps = [p[0] for p in points]
    if any(s < 0 for s in steps) or steps != sorted(steps):
        raise ValueError("schedule timesteps must be >= 0 and non-decreasing")
    return [[int(p[0]), p[1]] for p in points]


def _check_clip_rewards(value: Any) -> Any:
    if isinstance(value, list):
        if len(value) != 2 or not value[0] < value[1]:
            raise ValueError("a clip range is [low, high] with low < high")
    elif isinstance(value, float) and value <= 0:
        raise ValueError("a clip value must be > 0")
    return value


NonNegInt: TypeAlias = Annotated[int, Field(ge=0)]
PosInt: TypeAlias = Annotated[int, Field(ge=1)]
NonNegFloat: TypeAlias = Annotated[float, Field(ge=0.0)]
PosFloat: TypeAlias = Annotated[float, Field(gt=0.0)]
UnitFloat: TypeAlias = Annotated[float, Field(ge=0.0, le=1.0)]
JsonDict: TypeAlias = dict[str, Any]
ListOf: TypeAlias = Annotated[list[T], BeforeValidator(_sequence_to_list)]

if TYPE_CHECKING:
    from gymnasium.spaces import Space

    ClassRef: TypeAlias = type[Any] | str
    FunctionRef: TypeAlias = Callable[..., Any] | str
    CallableValue: TypeAlias = Callable[..., Any]
    ClassValue: TypeAlias = type[Any]
    SpaceRef: TypeAlias = Space[Any]
    Schedule: TypeAlias = list[tuple[int, float]] | list[list[float]]
    ClipRewards: TypeAlias = bool | float | list[float] | None
else:
    ClassRef = Annotated[
        type[Any], BeforeValidator(_must_be_class), WithJsonSchema(_IMPORT_PATH_SCHEMA)
    ]
    FunctionRef = Annotated[
        Callable[..., Any], BeforeValidator(_must_be_callable), WithJsonSchema(_IMPORT_PATH_SCHEMA)
    ]
    CallableValue = Annotated[Callable[..., Any], WithJsonSchema(_IMPORT_PATH_SCHEMA)]
    ClassValue = Annotated[type[Any], WithJsonSchema(_IMPORT_PATH_SCHEMA)]
    SpaceRef = Annotated[
        Any,
        AfterValidator(_must_be_space),
        WithJsonSchema({"type": "object", "description": "a gymnasium space, as {'$space': ...}"}),
    ]
    Schedule = Annotated[
        list[Annotated[list[float], BeforeValidator(_sequence_to_list)]],
        BeforeValidator(_sequence_to_list),
        AfterValidator(_check_schedule),
        WithJsonSchema(
            {
                "type": "array",
                "items": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 2,
                    "maxItems": 2,
                },
                "description": "[[timestep, value], ...] with non-decreasing timesteps",
            }
        ),
    ]
    ClipRewards = Annotated[
        bool | float | Annotated[list[float], BeforeValidator(_sequence_to_list)] | None,
        AfterValidator(_check_clip_rewards),
    ]
