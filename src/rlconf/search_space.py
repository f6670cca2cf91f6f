"""Recognise Tune search spaces without importing ray.

A field may hold a search space instead of a plain value: Tune's ``grid_search`` dict
(``{"grid_search": [...]}``) or one of its sampling domains (``tune.choice``,
``tune.uniform``, ...). Each candidate a space can produce is checked against the field like a
plain value; the space itself is stored as given so that ``to_dict()`` is a Tune param space.
"""

from __future__ import annotations

import math
from typing import Any

_DOMAIN_MODULE = "ray.tune.search.sample"


def is_grid_search(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "grid_search" in value


def _domain_kind(value: Any) -> str | None:
    """The name of the Tune domain class ``value`` is an instance of, if it is one."""
    for klass in type(value).__mro__:
        if klass.__name__ == "Domain" and klass.__module__ == _DOMAIN_MODULE:
            return type(value).__name__
    return None


def is_search_space(value: Any) -> bool:
    return is_grid_search(value) or _domain_kind(value) is not None


def candidates(value: Any) -> list[Any]:
    """Representative values a search space can produce, to validate against the field.

    Grids and choices yield every candidate; numeric ranges yield their bounds (an integer
    range's upper bound is exclusive); ``sample_from`` functions can't be checked before Tune
    calls them and yield nothing.
    """
    if is_grid_search(value):
        grid = value["grid_search"]
        return list(grid) if isinstance(grid, list | tuple) else [grid]
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
