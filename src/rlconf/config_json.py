"""``ConfigJson``: a config's lossless JSON form and the JSON Schema of it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from rlconf import json_codec
from rlconf.config_mapping import ConfigMapping
from rlconf.config_routing import ConfigRouting
from rlconf.errors import ConfigError
from rlconf.inert_keys import INERT_KEYS
from rlconf.key_aliases import KEY_ALIASES, NESTED_KEY_ALIASES, KeyAlias

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig


class ConfigJson(ConfigRouting, ConfigMapping):
    """``to_json()`` / ``from_json()`` (over ``to_dict`` / ``from_dict``) and ``json_schema()``."""

    __slots__ = ()

    def to_json(self, indent: int | None = 2) -> str:
        """Lossless JSON: classes and functions by import path, spaces by description."""
        encoded = json_codec.encode(self.to_dict(), f"{type(self).__name__}.to_json()")
        if self.algo_name is not None:
            encoded = {"$algorithm": self.algo_name, **encoded}
        return json.dumps(encoded, indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> AlgorithmConfig:
        """Rebuild a config from ``to_json()`` output, on the algorithm's config class."""
        where = f"{cls.__name__}.from_json()"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError.single(where, "json", f"is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError.single(
                where, "json", "must be a JSON object", value=data, has_value=True
            )
        # Only ever a base of AlgorithmConfig; the registry hands out AlgorithmConfig classes.
        target = cast("type[AlgorithmConfig]", cls)
        algo = data.pop("$algorithm", None)
        if algo is not None:
            from rlconf.registry import get_config_class

            target = get_config_class(algo)
            if not issubclass(target, cls):
                raise ConfigError.single(
                    where,
                    "$algorithm",
                    f"names a {target.__name__}, not a {cls.__name__}",
                    value=algo,
                    has_value=True,
                )
        return target.from_dict(json_codec.decode(data, where))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """JSON Schema (draft 2020-12) of this class's flat dict / JSON form."""
        from rlconf.schema import config_json_schema

        schema = config_json_schema(cls)
        for key, inert in INERT_KEYS.items():
            schema["properties"][key] = {
                "enum": list(inert.accepted),
                "description": inert.description,
            }
        properties = schema["properties"]
        for name, alias in KEY_ALIASES.items():
            if alias.key not in properties:
                continue
            properties[name] = _alias_entry(properties[alias.key], alias)
        for (field, name), alias in NESTED_KEY_ALIASES.items():
            ref = properties.get(field, {}).get("$ref")
            if ref is None or alias.key not in properties:
                continue
            target = schema["$defs"][ref.rsplit("/", 1)[-1]]
            target.setdefault("properties", {})[name] = _alias_entry(properties[alias.key], alias)
        return schema


def _alias_entry(entry: dict[str, Any], alias: KeyAlias) -> dict[str, Any]:
    """The schema of an alias of the key whose schema is ``entry``."""
    out = {k: v for k, v in entry.items() if k not in ("default", "x-method")}
    about = alias.describe()
    out["description"] = (
        f"{about[0].upper()}{about[1:]}: sets it (give one of the two). "
        + entry.get("description", "")
    ).strip()
    if alias.deprecated:
        out["deprecated"] = True
    return out
