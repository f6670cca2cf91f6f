"""The ``@fluent`` decorator: a config method whose runtime signature comes from its section.

mypy sees the method as written (``**kwargs: Unpack[SomeArgs]``). At runtime each config class
gets its own copy of the function whose ``__signature__`` lists every field as a keyword with
that class's default, so ``inspect.signature``, ``help()`` and IDEs show the real parameters.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from rlconf.frozen import thaw
from rlconf.section import key_of

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig

F = TypeVar("F", bound=Callable[..., Any])


class NotSet:
    """The default of a positional field that was not passed (None is a real value)."""

    _instance: NotSet | None = None

    def __new__(cls) -> NotSet:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<not set>"

    def __reduce__(self) -> str:
        return "NOT_SET"


NOT_SET = NotSet()


class _FluentMethod:
    def __init__(self, func: Callable[..., Any]) -> None:
        self._func = func
        self._name = func.__name__
        self._per_class: dict[type, Callable[..., Any]] = {}
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def __get__(self, obj: Any, owner: type) -> Any:
        method = self._per_class.get(owner)
        if method is None:
            method = self._per_class[owner] = self._build(owner)
        return method if obj is None else types.MethodType(method, obj)

    def _build(self, owner: type[AlgorithmConfig]) -> Callable[..., Any]:
        func = self._func

        def method(*args: Any, **kwargs: Any) -> Any:
            # ``self`` stays positional-only, so a keyword named "self" is an unknown key
            return func(*args, **kwargs)

        functools.update_wrapper(method, func)
        del method.__wrapped__  # type: ignore[attr-defined]
        section = owner._sections[self._name]
        defaults = owner._class_defaults()
        params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
        lines = []
        for pyname in section.ordered_names:
            kind = (
                inspect.Parameter.POSITIONAL_OR_KEYWORD
                if pyname in section.positional
                else inspect.Parameter.KEYWORD_ONLY
            )
            default = thaw(defaults[key_of(pyname)])
            params.append(
                inspect.Parameter(
                    pyname, kind, default=default, annotation=section.plain_type(pyname)
                )
            )
            lines.append(f"    {pyname}: {section.description(pyname)} Default: {default!r}.")
        params.sort(key=lambda p: p.kind)
        method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            params, return_annotation=owner
        )
        method.__doc__ = f"{section.doc}\n\nArgs:\n" + "\n".join(lines) if lines else section.doc
        method.__qualname__ = f"{owner.__name__}.{self._name}"
        return method


def fluent(func: F) -> F:
    return cast(F, _FluentMethod(func))
