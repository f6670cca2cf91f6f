"""A config section: the fields one fluent method sets, and their validation.

A section's fields are declared once, as a ``TypedDict`` whose annotations carry the type, the
constraint and the one-line doc (``Annotated[float, Field(gt=0, description=...)]``), plus a
table of defaults. mypy reads the TypedDict through ``Unpack`` in the method's signature;
pydantic validates calls against the same TypedDict; the runtime signature, the JSON Schema
and the error texts are derived from it.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args, get_origin

import typing_extensions
from pydantic import ConfigDict, TypeAdapter
from pydantic.fields import FieldInfo

from rlconf.frozen import FrozenDict, freeze

#: Python keyword names that stand for a config key which is a Python keyword or builtin.
#: The only place the two spellings are mapped.
KEY_OF_PYNAME: Mapping[str, str] = {"lambda_": "lambda", "input_": "input"}
PYNAME_OF_KEY: Mapping[str, str] = {v: k for k, v in KEY_OF_PYNAME.items()}

STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


def key_of(pyname: str) -> str:
    return KEY_OF_PYNAME.get(pyname, pyname)


def pyname_of(key: str) -> str:
    return PYNAME_OF_KEY.get(key, key)


def strip_annotated(tp: Any) -> Any:
    """The plain type of a hint: ``Annotated`` metadata removed, through unions and generics."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return strip_annotated(get_args(tp)[0])
    args = get_args(tp)
    if origin is None or not args:
        return tp
    stripped = tuple(strip_annotated(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, stripped)
    try:
        return origin[stripped]
    except TypeError:
        return tp


def _apply_strict_config(tp: Any, seen: set[int]) -> None:
    """Give every TypedDict reachable from ``tp`` the strict, no-extra-keys config."""
    if id(tp) in seen:
        return
    seen.add(id(tp))
    if typing_extensions.is_typeddict(tp):
        tp.__pydantic_config__ = STRICT
        for hint in typing.get_type_hints(tp, include_extras=True).values():
            _apply_strict_config(hint, seen)
        return
    for arg in get_args(tp):
        _apply_strict_config(arg, seen)


@dataclass(eq=False)
class Section:
    """The fields of one fluent method.

    ``fields`` is the TypedDict of every field (by Python name); ``positional`` names the
    fields that the method also takes positionally (``environment("CartPole-v1")``);
    ``defaults`` holds the reference defaults by Python name; ``nest_under`` is set for
    sections that live in a nested dict of the reference's flat config (``"multiagent"``).
    """

    method: str
    fields: type
    defaults: Mapping[str, Any]
    positional: tuple[str, ...] = ()
    nest_under: str | None = None
    doc: str = ""
    _frozen_defaults: FrozenDict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = set(self.names)
        missing = names - set(self.defaults)
        extra = set(self.defaults) - names
        if missing or extra:
            raise TypeError(
                f"section {self.method!r}: defaults missing for {sorted(missing)}, "
                f"defaults without a field: {sorted(extra)}"
            )
        self._frozen_defaults = freeze(dict(self.defaults))

    @functools.cached_property
    def hints(self) -> dict[str, Any]:
        """Field annotations with their ``Annotated`` metadata, by Python name."""
        return typing.get_type_hints(self.fields, include_extras=True)

    @property
    def names(self) -> tuple[str, ...]:
        keys: frozenset[str] = getattr(self.fields, "__required_keys__", frozenset()) | getattr(
            self.fields, "__optional_keys__", frozenset()
        )
        return tuple(keys)

    @functools.cached_property
    def ordered_names(self) -> tuple[str, ...]:
        """Positional fields first, then the others in declaration order."""
        rest = [n for n in self.hints if n not in self.positional]
        return (*self.positional, *rest)

    @property
    def frozen_defaults(self) -> FrozenDict:
        return self._frozen_defaults

    @functools.cached_property
    def adapter(self) -> TypeAdapter[Any]:
        _apply_strict_config(self.fields, set())
        return TypeAdapter(self.fields)

    @functools.cached_property
    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self.adapter.json_schema(mode="validation")
        return schema

    def field_schema(self, pyname: str) -> dict[str, Any]:
        props: dict[str, Any] = self.json_schema.get("properties", {})
        found: dict[str, Any] = props.get(pyname, {})
        return found

    def description(self, pyname: str) -> str:
        for meta in get_args(self.hints.get(pyname))[1:]:
            if isinstance(meta, FieldInfo) and meta.description:
                return meta.description
        return ""

    def plain_type(self, pyname: str) -> Any:
        return strip_annotated(self.hints[pyname])

    def with_fields(self, fields: type, defaults: Mapping[str, Any]) -> Section:
        """A copy of this section with a wider TypedDict (for an algorithm's own fields)."""
        return Section(
            method=self.method,
            fields=fields,
            defaults={**self.defaults, **defaults},
            positional=self.positional,
            nest_under=self.nest_under,
            doc=self.doc,
        )
