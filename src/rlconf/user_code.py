"""The user's code named on the command line (``rlconf --import X``): a module name or a path
to a ``.py`` file, imported before the command runs, so that the algorithms, envs and models it
registers are known to it."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from rlconf.errors import ConfigError

#: Names of the modules imported from files: they are not importable in Ray workers, so the
#: runtime sends their classes by value.
_FROM_FILES: list[str] = []


def import_user_code(target: str) -> ModuleType:
    """Import ``target`` (``package.module`` or ``path/to/file.py``) once; a ConfigError names
    it when it cannot be found or fails to import."""
    path = Path(target)
    try:
        if target.endswith(".py") or path.is_file():
            return _import_file(path)
        return importlib.import_module(target)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError.single(
            "rlconf",
            "--import",
            f"failed: {type(exc).__name__}: {exc}",
            value=target,
            has_value=True,
            allowed="an importable module name or a path to a .py file",
        ) from exc


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError.single(
            "rlconf",
            "--import",
            "is not a file",
            value=str(path),
            has_value=True,
            allowed="an importable module name or a path to a .py file",
        )
    name = path.stem
    loaded = sys.modules.get(name)
    if (
        loaded is not None
        and Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve()
    ):
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    _FROM_FILES.append(name)
    return module


def modules_from_files() -> list[str]:
    return list(_FROM_FILES)
