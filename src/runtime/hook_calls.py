"""Calling a callback hook with every keyword both RLlib dialects pass.

The runtime calls each hook with RLlib 2.x's keywords (``worker``, ``base_env``, ``policies``,
...) and its new API stack's (``env_runner``, ``metrics_logger``, ``rl_module``, ...) at once,
so a hook written either way finds its own. A hook that takes ``**kwargs`` gets them all; one
that names its parameters without ``**kwargs`` gets only those it names (decided once per
function, from its signature).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

_Hook = Callable[..., Any]


@functools.lru_cache(maxsize=1024)
def _keywords_of(function: Any) -> frozenset[str] | None:
    """The keywords ``function`` takes by name; None when it takes ``**kwargs`` (or its
    signature can't be read, so it gets everything)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    )


def keyword_filtered(hook: _Hook) -> _Hook:
    """``hook`` (a function or bound method) callable with any keywords: those it doesn't
    take are left out."""
    target = getattr(hook, "__func__", hook)
    try:
        keywords = _keywords_of(target)
    except TypeError:  # an unhashable callable object
        keywords = _keywords_of.__wrapped__(target)
    if keywords is None:
        return hook
    if getattr(hook, "__self__", None) is not None and target is not hook:
        keywords = keywords - {next(iter(inspect.signature(target).parameters), "")}

    def call(**kwargs: Any) -> Any:
        return hook(**{k: v for k, v in kwargs.items() if k in keywords})

    return call


def call_hook(callbacks: Any, name: str, **kwargs: Any) -> Any:
    """``callbacks.<name>(**kwargs)``, each keyword passed where the hook takes it."""
    return keyword_filtered(getattr(callbacks, name))(**kwargs)


#: Keywords only RLlib's new API stack passes to episode hooks, and only 2.x's.
_NEW_STACK_KEYWORDS = frozenset({"env_runner", "metrics_logger", "rl_module"})
_OLD_KEYWORDS = frozenset({"worker", "base_env", "policies"})


def may_read_history(hook: _Hook) -> bool:
    """Whether ``hook`` may read an episode's whole history (the new stack's getters): it
    names a keyword only the new stack passes, or none of 2.x's (``**kwargs`` alone, a
    wrapper of other functions, an unreadable signature)."""
    target = getattr(hook, "__func__", hook)
    try:
        names = set(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return True
    return bool(names & _NEW_STACK_KEYWORDS) or not (names & _OLD_KEYWORDS)
