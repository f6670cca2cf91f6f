"""JSON Schema (draft 2020-12) of a config class's flat dict / JSON form."""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from rlconf import json_codec
from rlconf.errors import ConfigError
from rlconf.frozen import thaw
from rlconf.section import key_of

if TYPE_CHECKING:
    from rlconf.config_base import ConfigBase

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _clean(schema: Any) -> Any:
    """Drop pydantic's generated titles ("Lr"); they add nothing to the descriptions."""
    if isinstance(schema, dict):
        return {k: _clean(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_clean(v) for v in schema]
    return schema


def config_json_schema(cls: type[ConfigBase]) -> dict[str, Any]:
    defaults = cls._class_defaults()
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for section in cls._sections.values():
        section_schema = copy.deepcopy(section.json_schema)
        defs.update(section_schema.get("$defs", {}))
        target = properties
        if section.nest_under is not None:
            nested = properties.setdefault(
                section.nest_under,
                {
                    "type": "object",
                    "description": section.doc,
                    "properties": {},
                    "additionalProperties": False,
                },
            )
            target = nested["properties"]
        for pyname in section.ordered_names:
            key = key_of(pyname)
            field = section_schema["properties"][pyname]
            field["description"] = section.description(pyname)
            field["x-method"] = f"{cls.__name__}.{section.method}({pyname}=...)"
            with contextlib.suppress(ConfigError):
                field["default"] = json_codec.encode(thaw(defaults[key]), "schema")
            target[key] = field
    schema: dict[str, Any] = {
        "$schema": DRAFT,
        "title": cls.__name__,
        "description": (cls.__doc__ or "").strip().splitlines()[0],
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if cls.algo_name is not None:
        properties["$algorithm"] = {
            "const": cls.algo_name,
            "description": "The algorithm this config is for.",
        }
    if defs:
        schema["$defs"] = defs
    cleaned: dict[str, Any] = _clean(schema)
    return cleaned
