"""Typed settings: each runtime component (learner, module, exploration, training step, runner,
buffer, ...) declares the settings it reads as a frozen dataclass, and ``settings_of`` builds it
once, when the component is built, from the validated config.

This is the one place the runtime reads the algorithm config by key
(``tests/test_typed_settings.py`` walks the source and fails on any other): a component then
reads typed attributes, never ``config["key"]`` or ``config.get("key", fallback)``, so no
fallback default can disagree with the SDK's, and a key a component needs that the config
lacks is an error at build naming the component.

A field's key is its name, or ``setting("lambda")`` for a key that is no Python name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from rlconf.errors import ConfigError

S = TypeVar("S")


def setting(key: str, **kwargs: Any) -> Any:
    """A dataclass field read from config key ``key`` (when it differs from the field name)."""
    return dataclasses.field(metadata={"key": key}, **kwargs)


def setting_keys(settings_class: type[Any]) -> list[str]:
    """The config keys ``settings_class`` reads, in field order."""
    return [_key_of(field) for field in dataclasses.fields(settings_class) if field.init]


def _key_of(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("key", field.name))


def settings_of(settings_class: type[S], config: Any, component: str) -> S:
    """``settings_class`` filled from ``config``: each field from the key of its name (or its
    ``setting(key)``). A key the config lacks is a ``ConfigError`` naming ``component``, unless
    the field has a default: a default only ever means "this algorithm has no such feature"
    (``use_critic=False`` for a config without a critic), never a second default for a key
    the config has."""
    if not dataclasses.is_dataclass(settings_class):
        raise TypeError(f"{settings_class!r} is not a dataclass of settings")
    values: dict[str, Any] = {}
    for field in dataclasses.fields(settings_class):
        if not field.init:
            continue
        key = _key_of(field)
        if key in config:
            values[field.name] = config[key]
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError.single(
                component,
                key,
                f"is a setting {component} needs, but {_config_name(config)} has no such key; "
                "declare it in the algorithm's config class",
                value=None,
                has_value=False,
            )
    return settings_class(**values)


def _config_name(config: Any) -> str:
    return type(config).__name__ if not isinstance(config, Mapping) else "the config"
