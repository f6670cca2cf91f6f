"""``ConfigLifecycle``: freezing a config, building its algorithm, copying and pickling it."""

from __future__ import annotations

import copy as _copy
from typing import Any, Self, TypeVar

from rlconf.config_base import ConfigBase
from rlconf.config_checks import ConfigChecks
from rlconf.errors import ConfigError

C = TypeVar("C", bound=ConfigBase)


class ConfigLifecycle(ConfigChecks):
    """``freeze()``, ``build()``, ``copy()`` and the copy / pickle protocols."""

    __slots__ = ()

    def freeze(self) -> Self:
        """Validate, then refuse every later change (nested values were read-only already)."""
        self.validate()
        object.__setattr__(self, "_frozen", True)
        return self

    def build(self, env: Any = None) -> Any:
        """Validate and build the runtime algorithm (``PPOConfig().build()`` is a ``PPO``).

        The config is copied and frozen for the algorithm; this config stays editable.
        ``env`` overrides the configured env.
        """
        return self._build_algorithm(env, "build")

    def build_algo(self, env: Any = None, logger_creator: Any = None, use_copy: bool = True) -> Any:
        """``build()`` under the name and with the signature of RLlib's new API stack.

        ``use_copy=False`` freezes this config too, as RLlib's algorithm then takes this object
        and freezes it (the algorithm holds a frozen copy with the same values either way).
        ``logger_creator`` is refused but for None: the algorithm writes its own results, to
        ``debugging(logger_config={"logdir": ...})`` when given.
        """
        where = f"{type(self).__name__}.build_algo()"
        if logger_creator is not None:
            raise ConfigError.single(
                where,
                "logger_creator",
                "is not supported: the algorithm writes its results (result.json, "
                "progress.csv, TensorBoard events) itself; choose their folder with "
                "debugging(logger_config={'logdir': ...})",
                value=logger_creator,
                has_value=True,
                allowed="None",
            )
        if not isinstance(use_copy, bool):
            raise ConfigError.single(
                where, "use_copy", "must be a bool", value=use_copy, has_value=True, allowed="bool"
            )
        algorithm = self._build_algorithm(env, "build_algo")
        if not use_copy and not self._frozen:
            self.freeze()
        return algorithm

    def _build_algorithm(self, env: Any, method: str) -> Any:
        from rlconf.registry import get_algorithm_class
        from rlconf.unresolved_spaces import refuse_search_spaces

        where = f"{type(self).__name__}.{method}()"
        if self.algo_name is None:
            raise ConfigError.single(
                where,
                "algorithm",
                "is not set: a plain AlgorithmConfig has no algorithm to build",
                allowed="an algorithm's config class, e.g. PPOConfig, PGConfig, A2CConfig",
            )
        refuse_search_spaces(self, where)
        return get_algorithm_class(self.algo_name)(config=self, env=env)

    @property
    def is_frozen(self) -> bool:
        return bool(self._frozen)

    def copy(self) -> Self:
        """An unfrozen deep copy."""
        clone = type(self).__new__(type(self))
        object.__setattr__(clone, "_values", {k: _copy_value(v) for k, v in self._values.items()})
        object.__setattr__(clone, "_inert", dict(self._inert))
        object.__setattr__(clone, "_frozen", False)
        return clone

    def __copy__(self) -> Self:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self.copy()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._values, self._frozen, self._inert))


def _rebuild(
    cls: type[C],
    values: dict[str, Any],
    frozen: bool,
    inert: dict[str, Any] | None = None,
) -> C:
    config = cls.__new__(cls)
    object.__setattr__(config, "_values", dict(values))
    object.__setattr__(config, "_inert", dict(inert or {}))
    object.__setattr__(config, "_frozen", frozen)
    return config


_IMMUTABLE = (str, int, float, bool, type(None), type)


def _copy_value(value: Any) -> Any:
    """Share what can't change (frozen containers of plain values, classes, functions)."""
    if isinstance(value, _IMMUTABLE) or callable(value):
        return value
    if isinstance(value, dict | list | tuple) and _all_immutable(value):
        return value
    return _copy.deepcopy(value)


def _all_immutable(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_all_immutable(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_all_immutable(v) for v in value)
    return isinstance(value, _IMMUTABLE) or callable(value)
