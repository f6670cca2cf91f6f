"""The ``@fluent`` decorator: a config method that sets the fields it is given.

A fluent method is written with every field as a parameter (the built-in configs' methods are
generated that way by ``rlconf.fluent_codegen``, into mixins the configs inherit) or as
``**kwargs: Unpack[SomeArgs]``. Its body hands what it was given to ``_set``:
``return self._set("training", locals())``. The defaults in the source are there for readers
and editors; the decorator turns every one of them into ``NOT_SET``, so that only the
arguments a call passes reach ``_set``, and a keyword the method doesn't know goes to ``_set``
too, which reports it with every other problem of the call (rather than Python's bare
TypeError).

At runtime each config class gets its own copy of the method whose ``__signature__`` lists
every field with that class's default, so ``inspect.signature``, ``help()`` and IDEs that
complete on live objects show the real parameters.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from rlconf.method_parameters import method_parameters

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig

F = TypeVar("F", bound=Callable[..., Any])
#: The type of ``self`` in fluent methods, which return it: a TypeVar rather than ``Self``
#: because jedi binds ``Self`` to the class that defines the method, so that a chained call
#: on a subclass would complete the parent's keywords.
SelfConfig = TypeVar("SelfConfig", bound="AlgorithmConfig")


class NotSet:
    """The runtime default of every fluent-method parameter: not passed (None is a real
    value)."""

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
        if func.__defaults__:
            func.__defaults__ = (NOT_SET,) * len(func.__defaults__)
        if func.__kwdefaults__:
            func.__kwdefaults__ = dict.fromkeys(func.__kwdefaults__, NOT_SET)
        self._func = func
        self._name = func.__name__
        parameters = inspect.signature(func).parameters.values()
        #: None when the method takes ``**kwargs``: every keyword reaches its body then.
        self._keywords: frozenset[str] | None = (
            None
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
            else frozenset(p.name for p in parameters if p.kind is not p.POSITIONAL_ONLY)
        )
        self._per_class: dict[type, Callable[..., Any]] = {}
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None and not hasattr(owner, "_sections"):
            return self  # read on a generated mixin itself, which has no sections
        method = self._per_class.get(owner)
        if method is None:
            method = self._per_class[owner] = self._build(owner)
        return method if obj is None else types.MethodType(method, obj)

    def _build(self, owner: type[AlgorithmConfig]) -> Callable[..., Any]:
        func, name, keywords = self._func, self._name, self._keywords
        section = owner._sections[self._name]
        positional = section.positional

        def method(config: AlgorithmConfig, /, *args: Any, **kwargs: Any) -> Any:
            if keywords is None or keywords.issuperset(kwargs):
                return func(config, *args, **kwargs)
            # an unknown keyword: _set names it, and everything else wrong with the call
            return config._set(name, {**dict(zip(positional, args, strict=False)), **kwargs})

        functools.update_wrapper(method, func)
        del method.__wrapped__  # type: ignore[attr-defined]
        defaults = owner._class_defaults()
        params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
        lines = []
        for param in method_parameters(owner, self._name):
            kind = (
                inspect.Parameter.POSITIONAL_OR_KEYWORD
                if param.positional
                else inspect.Parameter.KEYWORD_ONLY
            )
            default = param.default(defaults)
            params.append(
                inspect.Parameter(param.name, kind, default=default, annotation=param.plain_type)
            )
            lines.append(f"    {param.name}: {param.description} Default: {default!r}.")
        params.sort(key=lambda p: p.kind)
        method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            params, return_annotation=owner
        )
        method.__doc__ = f"{section.doc}\n\nArgs:\n" + "\n".join(lines) if lines else section.doc
        method.__qualname__ = f"{owner.__name__}.{self._name}"
        return method


def fluent(func: F) -> F:
    return cast(F, _FluentMethod(func))
