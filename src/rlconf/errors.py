"""The one exception type of the config SDK."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

_MAX_REPR = 80
#: A string (a path, an import path, an env id) is shown whole up to this length: a path cut
#: in the middle no longer says which file was meant.
_MAX_STR_REPR = 400


def short_repr(value: Any) -> str:
    """A bounded ``repr`` so that a huge value never floods an error message."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    limit = _MAX_STR_REPR if isinstance(value, str) else _MAX_REPR
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class FieldIssue:
    """One problem with one field: where, what was given, what is wrong, what is allowed, and
    where a file gives it (``location``: ``"file.yaml:7"``, shown first; empty when the value
    comes from no file)."""

    field: str
    problem: str
    value: Any = None
    has_value: bool = True
    allowed: str = ""
    location: str = ""

    def render(self) -> str:
        kind = getattr(self.value, "type_name", None) if isinstance(self.value, _Shown) else None
        kind = kind or type(self.value).__name__
        given = f"={short_repr(self.value)} ({kind})" if self.has_value else ""
        text = f"{self.field}{given}: {self.problem}"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        return f"{self.location}: {text}" if self.location else text


class ConfigError(ValueError):
    """A config value, key or combination is not allowed.

    ``where`` names the class and method (``"PPOConfig.training()"``); ``issues`` lists every
    problem of the call, not only the first.
    """

    def __init__(self, where: str, issues: Sequence[FieldIssue]) -> None:
        self.where = where
        self.issues = tuple(issues)
        count = len(self.issues)
        head = f"{where}: {count} invalid setting{'s' if count != 1 else ''}"
        body = "\n".join(f"  - {issue.render()}" for issue in self.issues)
        super().__init__(f"{head}\n{body}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Ray sends exceptions from remote workers pickled; a value that cannot be pickled (a
        # lambda) travels as what the message shows of it.
        issues = []
        for issue in self.issues:
            try:
                pickle.dumps(issue.value)
                issues.append(issue)
            except Exception:
                issues.append(replace(issue, value=_Shown(issue.value)))
        return (type(self), (self.where, issues))

    @classmethod
    def single(
        cls,
        where: str,
        field: str,
        problem: str,
        *,
        value: Any = None,
        has_value: bool = False,
        allowed: str = "",
    ) -> ConfigError:
        return cls(where, [FieldIssue(field, problem, value, has_value, allowed)])


class _Shown:
    """Stands in for a value that could not be pickled: same repr and type name."""

    def __init__(self, value: Any) -> None:
        self.text = short_repr(value)
        self.type_name = type(value).__name__

    def __repr__(self) -> str:
        return self.text
