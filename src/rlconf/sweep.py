"""Hyperparameter grids without Tune: ``grid(config, lr=[...], gamma=[...])``.

Every axis value is checked against its field once, up front; every combination is then a
validated, independent copy of the base config.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, TypeVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue
from rlconf.section import key_of, pyname_of

C = TypeVar("C", bound=AlgorithmConfig)


def grid_search(values: Iterable[Any]) -> Any:
    """Tune's grid marker, ``{"grid_search": [...]}``, usable as any field's value."""
    return {"grid_search": list(values)}


def grid(config: C, **axes: Iterable[Any]) -> list[C]:
    """Expand the cartesian product of ``axes`` over ``config`` into validated configs.

    Axis names are the fluent methods' keywords (``lambda_`` for ``"lambda"``); the order of
    the result is that of ``itertools.product`` over the axes as given.
    """
    cls = type(config)
    where = "rlconf.sweep.grid()"
    info = cls._info()
    issues: list[FieldIssue] = []
    names: list[str] = []
    columns: list[list[Any]] = []
    for name, values in axes.items():
        section = info.section_of_key.get(key_of(name))
        if section is None:
            issues.append(cls._unknown_key_issue(name, name))
            continue
        try:
            column = list(values)
        except TypeError:
            issues.append(
                FieldIssue(name, "axis values must be iterable", values, allowed="a list of values")
            )
            continue
        if not column:
            issues.append(FieldIssue(name, "axis has no values", column))
            continue
        for value in column:
            _, more = cls._finish(section, {pyname_of(key_of(name)): value}, [], "", None)
            issues.extend(more)
        names.append(key_of(name))
        columns.append(column)
    if issues:
        raise ConfigError(where, issues)
    configs = []
    for combination in itertools.product(*columns):
        candidate = config.copy()
        candidate.update_from_dict(dict(zip(names, combination, strict=True)))
        try:
            candidate.validate()
        except ConfigError as exc:
            point = ", ".join(
                f"{pyname_of(n)}={v!r}" for n, v in zip(names, combination, strict=True)
            )
            raise ConfigError(f"{where} at {point}", exc.issues) from None
        configs.append(candidate)
    return configs
