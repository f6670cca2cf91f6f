"""Random search without Tune: ``random(config, 20, seed=0, lr=sweep.loguniform(1e-5, 1e-3))``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from random import Random
from typing import Any, TypeAlias, TypeVar

from rlconf import search_space
from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue
from rlconf.policy_spec import PolicySpec
from rlconf.section import key_of, pyname_of
from rlconf.sweep_domains import Choice, Domain

C = TypeVar("C", bound=AlgorithmConfig)

#: What an axis of ``random()`` may be: a domain, or the values of a uniform choice.
Axis: TypeAlias = Domain[Any] | list[Any] | tuple[Any, ...]

_WHERE = "rlconf.sweep.random()"
_RLCONF_DOMAINS = "sweep.uniform(), sweep.loguniform(), sweep.choice(), sweep.randint()"
_AXIS_ALLOWED = f"an rlconf.sweep domain ({_RLCONF_DOMAINS}) or a non-empty list of values"


def random(config: C, num_samples: int, *, seed: int | None = None, **axes: Axis) -> list[C]:
    """Draw ``num_samples`` validated, independent copies of ``config`` with every axis sampled.

    Works without Tune (ray is never imported). Axis names are the fluent methods' keywords
    (``lambda_`` for ``"lambda"``); an axis is an ``rlconf.sweep`` domain or a list or tuple
    of values, drawn uniformly. Fields of ``config`` that hold an ``rlconf.sweep`` domain
    (``evaluation_config`` overrides and policy ``config`` overrides included) are sampled
    too; fields holding a ``grid_search`` or a Tune domain are refused, since this can't
    expand a grid nor sample Tune's domains.

    Every axis is checked against its field once, up front, and every problem of every axis
    is reported together; each sampled config is then validated, and an error names the
    values drawn. The same ``seed`` gives the same configs on every platform: each sample
    draws, from one ``random.Random(seed)``, the axes in the order given and then the
    config's own domains in field order. ``seed=None`` seeds from the OS.
    """
    cls = type(config)
    info = cls._info()
    issues = _argument_issues(num_samples, seed)
    keys: list[str] = []
    domains: list[Domain[Any]] = []
    for name, axis in axes.items():
        key = key_of(name)
        section = info.section_of_key.get(key)
        if section is None:
            issues.append(cls._unknown_key_issue(name, name))
            continue
        domain = _axis_domain(name, axis, issues)
        if domain is None:
            continue
        # A list's values are checked one by one, as grid() checks them, so that an issue
        # shows the bad value itself; a domain is checked as the search space it is.
        checked = list(axis) if isinstance(axis, list | tuple) else [domain]
        for value in checked:
            _, more = cls._finish(section, {pyname_of(key): value}, [], "", None)
            issues.extend(more)
        keys.append(key)
        domains.append(domain)
    sampled_fields = _sampled_fields(config, set(keys), issues)
    if issues:
        raise ConfigError(_WHERE, issues)
    rng = Random(seed)
    configs = []
    for index in range(num_samples):
        drawn: list[tuple[str, Any]] = []
        update: dict[str, Any] = {}
        for key, domain in zip(keys, domains, strict=True):
            value = domain.sample(rng)
            drawn.append((pyname_of(key), value))
            update[key] = value
        for key in sampled_fields:
            update[key] = _sample_tree(config._values[key], key, rng, drawn)
        candidate = config.copy()
        try:
            candidate.update_from_dict(update)
            candidate.validate()
        except ConfigError as exc:
            point = ", ".join(f"{name}={value!r}" for name, value in drawn)
            raise ConfigError(
                f"{_WHERE} at {point} (sample {index + 1} of {num_samples})", exc.issues
            ) from None
        configs.append(candidate)
    return configs


def _argument_issues(num_samples: Any, seed: Any) -> list[FieldIssue]:
    issues = []
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
        issues.append(
            FieldIssue("num_samples", "must be an int >= 1", num_samples, allowed="int >= 1")
        )
    # Only ints (and None) are seeded the same way by every Python version.
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        issues.append(FieldIssue("seed", "must be an int or None", seed, allowed="int or None"))
    return issues


def _axis_domain(name: str, axis: Any, issues: list[FieldIssue]) -> Domain[Any] | None:
    """The domain an axis draws from, or None after adding the issue that it is none."""
    if isinstance(axis, Domain):
        return axis
    if isinstance(axis, list | tuple):
        if not axis:
            issues.append(FieldIssue(name, "axis has no values", axis, allowed=_AXIS_ALLOWED))
            return None
        return Choice(axis)
    if search_space.is_grid_search(axis):
        issues.append(
            FieldIssue(
                name,
                "is a grid_search, which random() does not expand",
                axis,
                allowed=f"{_AXIS_ALLOWED}; expand grids with rlconf.sweep.grid()",
            )
        )
    elif search_space.is_tune_domain(axis):
        issues.append(
            FieldIssue(
                name,
                "is a Tune domain, which random() can't sample",
                axis,
                allowed=f"{_AXIS_ALLOWED}; or hand the config to Tune",
            )
        )
    else:
        issues.append(
            FieldIssue(name, "must be a domain or a list of values", axis, allowed=_AXIS_ALLOWED)
        )
    return None


def _sampled_fields(
    config: AlgorithmConfig, axis_keys: set[str], issues: list[FieldIssue]
) -> list[str]:
    """The keys of ``config`` whose values hold rlconf domains (axes replace theirs); an issue
    for every other search space in them."""
    keys = []
    for key, value in config._values.items():
        if key in axis_keys:
            continue
        spaces = list(search_space.find_search_spaces(value, key))
        for path, space in spaces:
            if search_space.is_grid_search(space):
                issues.append(
                    FieldIssue(
                        path,
                        "holds a grid_search, which random() does not expand",
                        space,
                        allowed="expand grids with rlconf.sweep.grid() (e.g. over the "
                        "configs random() returns), or replace it with an rlconf.sweep domain",
                    )
                )
            elif not isinstance(space, Domain):
                issues.append(
                    FieldIssue(
                        path,
                        "holds a Tune domain, which random() can't sample",
                        space,
                        allowed=f"an rlconf.sweep domain ({_RLCONF_DOMAINS}); "
                        "or hand the config to Tune",
                    )
                )
        if any(isinstance(space, Domain) for _, space in spaces):
            keys.append(key)
    return keys


def _sample_tree(value: Any, path: str, rng: Random, drawn: list[tuple[str, Any]]) -> Any:
    """``value`` with every rlconf domain replaced by a sample, in the order
    ``find_search_spaces`` lists them; each draw is added to ``drawn`` by path."""
    if isinstance(value, Domain):
        sample = value.sample(rng)
        drawn.append((path, sample))
        return sample
    if isinstance(value, Mapping):
        return {
            k: _sample_tree(v, search_space.key_path(path, k), rng, drawn) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        items = [_sample_tree(v, f"{path}[{i}]", rng, drawn) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, PolicySpec) and value.config is not None:
        return dataclasses.replace(
            value, config=_sample_tree(value.config, f"{path}.config", rng, drawn)
        )
    return value
