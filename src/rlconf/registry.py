"""Algorithm names -> their config class and their runtime class (by import path).

The runtime class is imported only when an algorithm is built, so ``import rlconf`` never
pulls in torch or ray.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconf.errors import ConfigError
from rlconf.importpath import resolve
from rlconf.unknown_keys import did_you_mean

if TYPE_CHECKING:
    from rlconf.algorithm_config import AlgorithmConfig


@dataclass(frozen=True)
class AlgorithmEntry:
    name: str
    config_class_path: str
    algorithm_class_path: str


_ENTRIES: dict[str, AlgorithmEntry] = {}


def register_algorithm(name: str, config_class_path: str, algorithm_class_path: str) -> None:
    """Make ``name`` known to ``get_config_class``, the CLI and Tune (by import paths)."""
    _ENTRIES[name] = AlgorithmEntry(name, config_class_path, algorithm_class_path)


for _name in ("PPO", "PG", "A2C"):
    register_algorithm(
        _name,
        f"rlconf.algorithms.{_name.lower()}:{_name}Config",
        f"runtime.algorithms.{_name.lower()}:{_name}",
    )


def list_algorithms() -> list[str]:
    return sorted(_ENTRIES)


def _entry(name: str, where: str) -> AlgorithmEntry:
    entry = _ENTRIES.get(name)
    if entry is None:
        hint = did_you_mean(name, _ENTRIES)
        raise ConfigError.single(
            where,
            "algorithm",
            "is not registered" + (f" ({hint})" if hint else ""),
            value=name,
            has_value=True,
            allowed=", ".join(list_algorithms()),
        )
    return entry


def get_config_class(name: str) -> type[AlgorithmConfig]:
    """The config class of a registered algorithm: ``get_config_class("PPO") is PPOConfig``."""
    config_class: type[AlgorithmConfig] = resolve(
        _entry(name, "rlconf.get_config_class()").config_class_path
    )
    return config_class


def algorithm_class_path(name: str) -> str:
    """Import path of the runtime class of a registered algorithm (not imported here)."""
    return _entry(name, "rlconf.algorithm_class_path()").algorithm_class_path


def get_algorithm_class(name: str) -> Any:
    """Import and return the runtime class of a registered algorithm."""
    return resolve(algorithm_class_path(name))


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
