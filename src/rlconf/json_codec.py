"""Lossless JSON form of config values.

Plain JSON values stay as they are. Everything else is a one-key object: ``{"$import": path}``
for classes and module-level functions, ``{"$space": {...}}`` for gymnasium spaces,
``{"$tuple": [...]}``, ``{"$set": [...]}``, ``{"$float": "nan"}`` and ``{"$items": [[k, v]]}``
for a dict with non-string keys. Policy specs and RL module specs become plain objects that
validation turns back into ``PolicySpec`` and ``RLModuleSpec`` (module classes as import paths).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from rlconf import search_space
from rlconf.errors import ConfigError
from rlconf.importpath import ImportPathError, path_of, resolve
from rlconf.policy_spec import PolicySpec
from rlconf.rl_module_spec import MultiRLModuleSpec, RLModuleSpec
from rlconf.spaces import decode_space, encode_space, is_space

_ALLOWED = (
    "JSON values, classes and module-level functions (stored by import path), "
    "gymnasium spaces, PolicySpec, RLModuleSpec"
)


def encode(value: Any, where: str, path: str = "") -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, list):
        return [encode(v, where, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, where, f"{path}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, set | frozenset):
        items = sorted(value, key=repr)
        return {"$set": [encode(v, where, f"{path}[{i}]") for i, v in enumerate(items)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: encode(v, where, f"{path}.{k}" if path else k) for k, v in value.items()}
        return {
            "$items": [
                [encode(k, where, path), encode(v, where, f"{path}[{k!r}]")]
                for k, v in value.items()
            ]
        }
    if isinstance(value, RLModuleSpec | MultiRLModuleSpec):
        # Its module class as the import path (a plain string: reading the file back leaves
        # the import to the runtime).
        try:
            plain = value.plain()
        except ImportPathError as exc:
            raise ConfigError.single(
                where, path, f"can't be written to JSON: {exc}", value=value, has_value=True
            ) from None
        return encode(plain, where, path)
    if isinstance(value, PolicySpec):
        return {
            f.name: encode(getattr(value, f.name), where, f"{path}.{f.name}")
            for f in dataclasses.fields(value)
        }
    if is_space(value):
        try:
            return {"$space": encode_space(value)}
        except ValueError as exc:
            raise ConfigError.single(where, path, str(exc)) from None
    if search_space.is_search_space(value):
        raise ConfigError.single(
            where,
            path,
            "holds a Tune search space, which has no JSON form; "
            "pass config.to_dict() to Tune as its param_space instead",
        )
    if isinstance(value, type) or callable(value):
        try:
            return {"$import": path_of(value)}
        except ImportPathError as exc:
            raise ConfigError.single(
                where,
                path,
                f"can't be written to JSON: {exc}",
                value=value,
                has_value=True,
                allowed=_ALLOWED,
            ) from None
    raise ConfigError.single(
        where,
        path,
        f"a {type(value).__name__} can't be written to JSON",
        value=value,
        has_value=True,
        allowed=_ALLOWED,
    )


def decode(value: Any, where: str, path: str = "") -> Any:
    if isinstance(value, list):
        return [decode(v, where, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((tag, inner),) = value.items()
        try:
            if tag == "$import":
                return resolve(inner)
            if tag == "$space":
                return decode_space(inner)
            if tag == "$tuple":
                return tuple(decode(v, where, path) for v in inner)
            if tag == "$set":
                return {decode(v, where, path) for v in inner}
            if tag == "$float":
                return float(inner)
            if tag == "$items":
                return {decode(k, where, path): decode(v, where, path) for k, v in inner}
        except (ImportPathError, ValueError, TypeError, KeyError) as exc:
            raise ConfigError.single(
                where, path or tag, f"can't be read back: {exc}", value=value, has_value=True
            ) from None
    return {k: decode(v, where, f"{path}.{k}" if path else k) for k, v in value.items()}
