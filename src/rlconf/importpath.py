"""Classes and functions named by import path (``"package.module:Name"``).

This is how a config stores callables in JSON, and how YAML or JSON files name them.
"""

from __future__ import annotations

import importlib
from typing import Any


class ImportPathError(ValueError):
    """A path can't be resolved, or an object can't be named by one."""


def split(path: str) -> tuple[str, str]:
    """``(module, qualified name)`` of ``"pkg.mod:Name"`` or ``"pkg.mod.Name"``."""
    if ":" in path:
        module_name, _, qualname = path.partition(":")
    else:
        module_name, _, qualname = path.rpartition(".")
    return module_name, qualname


def resolve(path: str) -> Any:
    """Import the object at ``path``: ``"pkg.mod:Name"`` or ``"pkg.mod.Name"``."""
    module_name, qualname = split(path)
    if not module_name or not qualname:
        raise ImportPathError(f"{path!r} is not an import path like 'package.module:Name'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportPathError(f"can't import module {module_name!r} of {path!r}: {exc}") from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportPathError(f"module {module_name!r} has no attribute {qualname!r}") from None
    return obj


def path_of(obj: Any) -> str:
    """The import path that names ``obj``; raises ImportPathError if no path reaches it."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise ImportPathError(f"a {type(obj).__name__} object has no import path")
    if "<lambda>" in qualname:
        raise ImportPathError("a lambda has no import path; define it with `def` at module level")
    if "<locals>" in qualname:
        raise ImportPathError(
            f"{qualname!r} is defined inside a function and has no import path; "
            "define it at module level"
        )
    if module == "__main__":
        raise ImportPathError(
            f"{qualname!r} lives in the __main__ script, which other processes can't import; "
            "move it into an importable module"
        )
    path = f"{module}:{qualname}"
    try:
        found = resolve(path)
    except ImportPathError as exc:
        raise ImportPathError(f"{path!r} does not resolve: {exc}") from None
    if found is not obj:
        raise ImportPathError(f"{path!r} names a different object than the one given")
    return path
