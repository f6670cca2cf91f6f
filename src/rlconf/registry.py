"""Algorithm names -> their config class and their runtime class (by import path).

The runtime class is imported only when an algorithm is built, so ``import rlconf`` never
pulls in torch or ray.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconf.errors import ConfigError, FieldIssue
from rlconf.importpath import resolve, split
from rlconf.unknown_keys import did_you_mean

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig


@dataclass(frozen=True)
class AlgorithmEntry:
    name: str
    #: An import path (``"package.module:Class"``), or the class itself.
    config_class_path: str | type[Any]
    algorithm_class_path: str | type[Any]


_ENTRIES: dict[str, AlgorithmEntry] = {}
_LISTENERS: list[Callable[[str], None]] = []


def on_register(listener: Callable[[str], None]) -> None:
    """Call ``listener(name)`` for every algorithm registered from now on (the runtime keeps
    Tune's registry in step this way)."""
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


def register_algorithm(
    name: str, config_class: str | type[Any], algorithm_class: str | type[Any]
) -> None:
    """Make ``name`` known to ``get_config_class``, ``config.build()``, the CLI, Tune and
    ``from_checkpoint``. Each class is given as an import path (imported when first needed) or
    as the class itself. The config class's ``algo_name`` is set to ``name``."""
    if not isinstance(name, str) or not name:
        raise ConfigError.single(
            "rlconf.register_algorithm()",
            "name",
            "must be a non-empty string",
            value=name,
            has_value=True,
        )
    for field, value in (("config_class", config_class), ("algorithm_class", algorithm_class)):
        if not isinstance(value, str | type):
            raise ConfigError.single(
                "rlconf.register_algorithm()",
                field,
                "is neither a class nor an import path",
                value=value,
                has_value=True,
                allowed="a class, or 'package.module:Class'",
            )
    if isinstance(config_class, type):
        _check_config_class(name, config_class)
    _ENTRIES[name] = AlgorithmEntry(name, config_class, algorithm_class)
    for listener in _LISTENERS:
        listener(name)


def _check_config_class(name: str, config_class: type[Any]) -> None:
    from rlconf.algorithm_config import AlgorithmConfig

    if not issubclass(config_class, AlgorithmConfig):
        raise ConfigError.single(
            "rlconf.register_algorithm()",
            "config_class",
            "is not a subclass of AlgorithmConfig",
            value=config_class.__name__,
            has_value=True,
        )
    if config_class.algo_name != name:
        config_class.algo_name = name


for _name in ("PPO", "PG", "A2C", "DQN", "SAC", "DDPG", "TD3", "MARWIL", "BC", "IMPALA", "APPO"):
    register_algorithm(
        _name,
        f"rlconf.algorithms.{_name.lower()}:{_name}Config",
        f"runtime.algorithms.{_name.lower()}:{_name}",
    )


def list_algorithms() -> list[str]:
    return sorted(_ENTRIES)


def algorithm_issue(name: Any, field: str = "algorithm") -> FieldIssue | None:
    """What is wrong with ``name`` as a registered algorithm's name (given as ``field``, e.g.
    ``--run``), with a did-you-mean and the registered names; None when it is one."""
    if isinstance(name, str) and name in _ENTRIES:
        return None
    hint = did_you_mean(name, _ENTRIES) if isinstance(name, str) else ""
    return FieldIssue(
        field,
        "is not registered" + (f" ({hint})" if hint else ""),
        name,
        allowed=", ".join(list_algorithms())
        + " (an algorithm of your own: register_algorithm() in the module that defines it; "
        "on the command line, --import that module or file)",
    )


def _entry(name: str, where: str) -> AlgorithmEntry:
    problem = algorithm_issue(name)
    if problem is not None:
        raise ConfigError(where, [problem])
    return _ENTRIES[name]


def get_config_class(name: str) -> type[AlgorithmConfig]:
    """The config class of a registered algorithm: ``get_config_class("PPO") is PPOConfig``."""
    entry = _entry(name, "rlconf.get_config_class()")
    config_class: type[AlgorithmConfig] = _load(entry.config_class_path)
    return config_class


def config_module_name(name: str) -> str:
    """The module of a registered algorithm's config class, without importing it (where
    ``rlconf.fluent_codegen`` looks for config classes whose generated module is missing)."""
    target = _entry(name, "rlconf.config_module_name()").config_class_path
    return split(target)[0] if isinstance(target, str) else target.__module__


def algorithm_class_path(name: str) -> str:
    """Import path of the runtime class of a registered algorithm (not imported here)."""
    target = _entry(name, "rlconf.algorithm_class_path()").algorithm_class_path
    if isinstance(target, str):
        return target
    return f"{target.__module__}:{target.__qualname__}"


def get_algorithm_class(name: str) -> Any:
    """Import and return the runtime class of a registered algorithm."""
    return _load(_entry(name, "rlconf.get_algorithm_class()").algorithm_class_path)


def _load(target: str | type[Any]) -> Any:
    return resolve(target) if isinstance(target, str) else target


def config_class_with_field(key: str) -> type[AlgorithmConfig] | None:
    """A registered config class that has ``key``, for "that is a PPO setting" hints."""
    for name in list_algorithms():
        try:
            config_class = get_config_class(name)
        except Exception:  # a user entry that does not import must not hide the real error
            continue
        if key in config_class._info().section_of_key:
            return config_class
    return None
