"""Hyperparameter sweeps: ``grid(config, lr=[...], gamma=[...])`` and
``random(config, 20, seed=0, lr=loguniform(1e-5, 1e-3))`` expand into plain configs without
Tune; the search domains ``uniform``, ``loguniform``, ``choice`` and ``randint`` (which
``to_tune()`` turns into Tune's) and ``grid_search`` can also be a field's value; and
``run(configs_or_config_with_spaces, stop=..., metric=..., mode=...)`` trains every trial as a
Ray Tune experiment and returns a ``SweepSummary``.

Every axis value is checked against its field once, up front; every combination is then a
validated, independent copy of the base config.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, TypeVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue
from rlconf.search_space import to_tune_space
from rlconf.section import key_of, pyname_of
from rlconf.sweep_domains import (
    Choice,
    Domain,
    LogUniform,
    RandInt,
    Uniform,
    choice,
    loguniform,
    randint,
    uniform,
)
from rlconf.sweep_random import Axis, random
from rlconf.sweep_run import run
from rlconf.sweep_summary import SweepError, SweepSummary, TrialSummary

__all__ = [
    "Axis",
    "Choice",
    "Domain",
    "LogUniform",
    "RandInt",
    "SweepError",
    "SweepSummary",
    "TrialSummary",
    "Uniform",
    "choice",
    "grid",
    "grid_search",
    "loguniform",
    "param_space",
    "randint",
    "random",
    "run",
    "uniform",
]

C = TypeVar("C", bound=AlgorithmConfig)


def param_space(config: AlgorithmConfig) -> dict[str, Any]:
    """``config`` as a Ray Tune param space (``tune.Tuner(..., param_space=...)``): its dict,
    with every ``sweep`` domain turned into Tune's and Tune's own search spaces kept."""
    space: dict[str, Any] = to_tune_space(config.to_dict())
    return space


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
