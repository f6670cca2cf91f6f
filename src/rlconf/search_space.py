"""Recognise search spaces without importing ray.

A field may hold a search space instead of a plain value: Tune's ``grid_search`` dict
(``{"grid_search": [...]}``), one of Tune's sampling domains (``tune.choice``,
``tune.uniform``, ...) or one of rlconf's (``rlconf.sweep.uniform``, ...). Each candidate a
space can produce is checked against the field like a plain value; the space itself is stored
as given. ``to_dict()`` is a Tune param space as long as it holds Tune's spaces only;
``to_tune_space()`` makes it one when it holds rlconf's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Any

from rlconf.policy_spec import PolicySpec
from rlconf.sweep_domains import Domain

_DOMAIN_MODULE = "ray.tune.search.sample"


def is_grid_search(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "grid_search" in value


def _domain_kind(value: Any) -> str | None:
    """The name of the Tune domain class ``value`` is an instance of, if it is one."""
    for klass in type(value).__mro__:
        if klass.__name__ == "Domain" and klass.__module__ == _DOMAIN_MODULE:
            return type(value).__name__
    return None


def is_tune_domain(value: Any) -> bool:
    return _domain_kind(value) is not None


def is_search_space(value: Any) -> bool:
    return is_grid_search(value) or isinstance(value, Domain) or _domain_kind(value) is not None


def candidates(value: Any) -> list[Any]:
    """Representative values a search space can produce, to validate against the field.

    Grids and choices yield every candidate; numeric ranges yield their bounds (an integer
    range's upper bound is exclusive); ``sample_from`` functions can't be checked before Tune
    calls them and yield nothing.
    """
    if is_grid_search(value):
        grid = value["grid_search"]
        return list(grid) if isinstance(grid, list | tuple) else [grid]
    if isinstance(value, Domain):
        return value.candidates()
    kind = _domain_kind(value)
    if kind == "Categorical":
        return list(value.categories)
    if kind == "Float":
        return [b for b in (value.lower, value.upper) if b is not None and math.isfinite(b)]
    if kind == "Integer":
        return [value.lower, value.upper - 1]
    return []


def is_valid_grid(value: Any) -> bool:
    grid = value["grid_search"]
    return isinstance(grid, list | tuple) and len(grid) > 0


def find_search_spaces(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted path, space)`` for every search space in a value tree, in order.

    Walks dicts (read-only ones included), lists, tuples and the ``config`` overrides of a
    ``PolicySpec``, the places a config can hold a space; a space's own contents are not
    searched (a grid's values are candidates, not spaces).
    """
    if is_search_space(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from find_search_spaces(item, key_path(path, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from find_search_spaces(item, f"{path}[{index}]")
    elif isinstance(value, PolicySpec) and value.config is not None:
        yield from find_search_spaces(value.config, key_path(path, "config"))


def key_path(path: str, key: Any) -> str:
    """The path of ``key`` inside the mapping at ``path``."""
    if not isinstance(key, str):
        return f"{path}[{key!r}]"
    return f"{path}.{key}" if path else key


def search_space_paths(values: Mapping[str, Any]) -> list[str]:
    """The dotted path of every search space in a config's values, e.g.
    ``["lr", "evaluation_config.gamma", "env_config.sizes[0]"]``."""
    return [path for path, _ in find_search_spaces(values)]


def to_tune_space(value: Any) -> Any:
    """A copy of ``value`` that Tune can resolve: every rlconf domain replaced by its
    ``to_tune()``, read-only containers made plain dicts and lists.

    Tune's domains and grids are kept (their containers made plain). Tune can't assign into a
    tuple inside a tuple nor into a ``PolicySpec``, so a tuple holding a search space becomes a
    list and such a ``PolicySpec`` a dict of its fields (which config validation turns back
    into a ``PolicySpec``); other tuples stay tuples, which tuple-typed fields need.
    """
    if isinstance(value, Domain):
        return value.to_tune()
    if isinstance(value, Mapping):
        return {key: to_tune_space(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_tune_space(item) for item in value]
    if isinstance(value, tuple):
        items = [to_tune_space(item) for item in value]
        return items if _holds_space(value) else tuple(items)
    if isinstance(value, frozenset):
        # A config stores a set frozen; hand it back as to_dict() does.
        return {to_tune_space(item) for item in value}
    if isinstance(value, PolicySpec) and _holds_space(value):
        return {
            field.name: to_tune_space(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    return value


def _holds_space(value: Any) -> bool:
    return next(find_search_spaces(value), None) is not None
