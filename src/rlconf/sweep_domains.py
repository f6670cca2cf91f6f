"""Typed search domains that work without Tune: ``uniform``, ``loguniform``, ``choice``,
``randint``.

A domain can be a field's value (it is a search space, like Tune's domains: each of its
``candidates()`` is validated against the field), is sampled by ``rlconf.sweep.random()`` from
a ``random.Random``, and turns into the equivalent Tune domain with ``to_tune()``. Importing
this module imports neither ray nor numpy; ``to_tune()`` imports ray when it is called.
"""

from __future__ import annotations

import math
import numbers
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rlconf.errors import ConfigError, FieldIssue
from rlconf.frozen import freeze, thaw

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_FINITE = "a finite number"


class Domain(ABC, Generic[T_co]):
    """A set of values to draw a hyperparameter from."""

    __slots__ = ()

    @abstractmethod
    def sample(self, rng: random.Random) -> T_co:
        """One value, drawn with ``rng`` only (so a seeded ``rng`` gives the same value)."""

    @abstractmethod
    def candidates(self) -> list[T_co]:
        """Representative values to validate against a field: every value of a choice, the
        bounds of a range (``upper - 1`` for ``randint``, whose upper bound is exclusive)."""

    @abstractmethod
    def to_tune(self) -> Any:
        """The equivalent ``ray.tune`` domain (imports ray)."""


def _is_real(value: Any) -> bool:
    # bool is an int subclass; True as a bound is a mistake, not 1.
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def _real_issues(names: Sequence[str], values: Sequence[Any]) -> list[FieldIssue]:
    issues = []
    for name, value in zip(names, values, strict=True):
        if not _is_real(value):
            issues.append(FieldIssue(name, "must be a number", value, allowed=_FINITE))
        elif not math.isfinite(value):
            issues.append(FieldIssue(name, "must be finite", value, allowed=_FINITE))
    return issues


def _order_issue(lower: Any, upper: Any) -> list[FieldIssue]:
    if lower < upper:
        return []
    return [
        FieldIssue(
            "upper", f"must be greater than lower ({lower!r})", upper, allowed=f"> {lower!r}"
        )
    ]


def _raise(where: str, issues: list[FieldIssue]) -> None:
    if issues:
        raise ConfigError(where, issues)


@dataclass(frozen=True, repr=False)
class Uniform(Domain[float]):
    """Floats drawn uniformly from ``[lower, upper]``; like ``tune.uniform``."""

    lower: float
    upper: float

    def __post_init__(self) -> None:
        issues = _real_issues(("lower", "upper"), (self.lower, self.upper))
        if not issues:
            issues = _order_issue(self.lower, self.upper)
        if not issues and not math.isfinite(self.upper - self.lower):
            # rng.uniform scales by upper - lower, which would overflow to inf.
            issues.append(
                FieldIssue(
                    "upper",
                    f"is too far from lower ({self.lower!r}): upper - lower overflows",
                    self.upper,
                    allowed="bounds less than about 1.8e308 apart",
                )
            )
        _raise("rlconf.sweep.uniform()", issues)
        # Stored as floats so that a field sees the floats Tune would produce, even for
        # uniform(0, 1).
        object.__setattr__(self, "lower", float(self.lower))
        object.__setattr__(self, "upper", float(self.upper))

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(self.lower, self.upper)

    def candidates(self) -> list[float]:
        return [self.lower, self.upper]

    def to_tune(self) -> Any:
        from ray import tune

        return tune.uniform(self.lower, self.upper)

    def __repr__(self) -> str:
        return f"uniform({self.lower!r}, {self.upper!r})"


@dataclass(frozen=True, repr=False)
class LogUniform(Domain[float]):
    """Floats in ``[lower, upper]`` whose logarithm is uniform, so that every decade is
    equally likely; like ``tune.loguniform``. ``base`` is accepted for compatibility with
    Tune's signature and shown in the repr; the distribution is the same for every base."""

    lower: float
    upper: float
    base: float = 10

    def __post_init__(self) -> None:
        where = "rlconf.sweep.loguniform()"
        issues = _real_issues(("lower", "upper", "base"), (self.lower, self.upper, self.base))
        bad = {issue.field for issue in issues}
        if "lower" not in bad and self.lower <= 0:
            issues.append(
                FieldIssue(
                    "lower", "must be > 0 on a log scale", self.lower, allowed="a number > 0"
                )
            )
        if "base" not in bad and (self.base <= 0 or self.base == 1):
            issues.append(
                FieldIssue(
                    "base",
                    "must be > 0 and not 1",
                    self.base,
                    allowed="a finite number > 0 other than 1, e.g. 10, 2 or math.e",
                )
            )
        if not issues:
            issues = _order_issue(self.lower, self.upper)
        _raise(where, issues)
        for name in ("lower", "upper", "base"):
            object.__setattr__(self, name, float(getattr(self, name)))

    def sample(self, rng: random.Random) -> float:
        value = math.exp(rng.uniform(math.log(self.lower), math.log(self.upper)))
        # exp(log(x)) can miss x by an ulp; a sample must never leave the validated bounds.
        return min(max(value, self.lower), self.upper)

    def candidates(self) -> list[float]:
        return [self.lower, self.upper]

    def to_tune(self) -> Any:
        from ray import tune

        # The distribution doesn't depend on the base, and Ray 2.x warns that its own
        # ``base`` argument is deprecated.
        return tune.loguniform(self.lower, self.upper)

    def __repr__(self) -> str:
        base = "" if self.base == 10 else f", base={self.base!r}"
        return f"loguniform({self.lower!r}, {self.upper!r}{base})"


@dataclass(frozen=True, repr=False)
class Choice(Domain[T]):
    """One of ``values``, each equally likely; like ``tune.choice``.

    The values are stored as a tuple of frozen values (lists and dicts become read-only), as a
    config stores them, so that changing the list given does not change the domain.
    """

    values: Sequence[T]

    def __post_init__(self) -> None:
        where = "rlconf.sweep.choice()"
        allowed = "a non-empty list or tuple of values"
        # A set has no stable order across processes (str hashes are salted), which would make
        # seeded sampling irreproducible; a str is almost always a forgotten list.
        if not isinstance(self.values, Sequence) or isinstance(self.values, str | bytes):
            raise ConfigError.single(
                where,
                "values",
                f"must be a sequence of values, not a {type(self.values).__name__}",
                value=self.values,
                has_value=True,
                allowed=allowed,
            )
        if not self.values:
            raise ConfigError.single(
                where, "values", "has no values", value=self.values, has_value=True, allowed=allowed
            )
        object.__setattr__(self, "values", tuple(freeze(v) for v in self.values))

    def sample(self, rng: random.Random) -> T:
        return rng.choice(self.values)

    def candidates(self) -> list[T]:
        return list(self.values)

    def to_tune(self) -> Any:
        from ray import tune

        return tune.choice([thaw(v) for v in self.values])

    def __repr__(self) -> str:
        return f"choice({[thaw(v) for v in self.values]!r})"


@dataclass(frozen=True, repr=False)
class RandInt(Domain[int]):
    """Integers drawn uniformly from ``lower`` to ``upper - 1`` (``upper`` is exclusive, as in
    ``tune.randint`` and ``range``)."""

    lower: int
    upper: int

    def __post_init__(self) -> None:
        issues = []
        for name in ("lower", "upper"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                issues.append(FieldIssue(name, "must be an int", value, allowed="an int"))
        if not issues:
            issues = _order_issue(self.lower, self.upper)
        _raise("rlconf.sweep.randint()", issues)
        # numpy integers pass the check above; a config field wants a plain int.
        object.__setattr__(self, "lower", int(self.lower))
        object.__setattr__(self, "upper", int(self.upper))

    def sample(self, rng: random.Random) -> int:
        return rng.randrange(self.lower, self.upper)

    def candidates(self) -> list[int]:
        return [self.lower, self.upper - 1]

    def to_tune(self) -> Any:
        from ray import tune

        return tune.randint(self.lower, self.upper)

    def __repr__(self) -> str:
        return f"randint({self.lower!r}, {self.upper!r})"


def uniform(lower: float, upper: float) -> Uniform:
    """Floats drawn uniformly between ``lower`` and ``upper``."""
    return Uniform(lower, upper)


def loguniform(lower: float, upper: float, base: float = 10) -> LogUniform:
    """Floats between ``lower`` (> 0) and ``upper``, uniform on a log scale."""
    return LogUniform(lower, upper, base)


def choice(values: Sequence[T]) -> Choice[T]:
    """One of ``values`` (a list or tuple), each equally likely."""
    return Choice(values)


def randint(lower: int, upper: int) -> RandInt:
    """Integers from ``lower`` up to ``upper - 1``."""
    return RandInt(lower, upper)
