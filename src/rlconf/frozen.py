"""Immutable containers that a config stores its nested values in.

A config keeps every nested dict and list in these containers, so nothing reachable from a
config can change without going through a validated setter; they stay ``dict`` / ``list``
subclasses so that ``json.dumps`` and user code that reads them keep working.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, NoReturn, SupportsIndex

from rlconf.errors import ConfigError

_HINT = "config values are read-only; change them with the config's setter methods"


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise ConfigError.single("config", "nested value", f"cannot be modified in place: {_HINT}")


class FrozenDict(dict[str, Any]):
    """A dict that refuses every mutation."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return FrozenDict({k: copy.deepcopy(v, memo) for k, v in self.items()})

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda item: item[0])))


class FrozenList(list[Any]):
    """A list that refuses every mutation."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = reverse = sort = clear = _refuse

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return FrozenList(copy.deepcopy(v, memo) for v in self)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __mul__(self, n: SupportsIndex) -> list[Any]:
        return list(self) * n


def freeze(value: Any) -> Any:
    """Return ``value`` with every nested dict and list replaced by its frozen form."""
    kind = type(value)
    if kind is FrozenDict or kind is FrozenList:
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple) and kind is not str:
        frozen = FrozenList(freeze(v) for v in value)
        return frozen if isinstance(value, list) else tuple(frozen)
    if isinstance(value, set | frozenset):
        return frozenset(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The plain, mutable deep copy of a frozen value (what ``to_dict()`` hands out)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    if isinstance(value, tuple):
        return tuple(thaw(v) for v in value)
    if isinstance(value, frozenset):
        return {thaw(v) for v in value}
    return value
