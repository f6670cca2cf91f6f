"""``ConfigBase``: the state every config mixin works on, and what a class derives from its
sections (field keys, defaults, nested groups)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rlconf.errors import ConfigError
from rlconf.frozen import freeze
from rlconf.inert_keys import INERT_KEYS
from rlconf.section import Section, key_of


class _ClassInfo:
    """What a config class derives from its sections, computed once per class."""

    def __init__(self, cls: type[ConfigBase]) -> None:
        self.section_of_key: dict[str, Section] = {}
        for section in cls._sections.values():
            for pyname in section.ordered_names:
                self.section_of_key[key_of(pyname)] = section
        defaults: dict[str, Any] = {}
        for section in cls._sections.values():
            for pyname, value in section.frozen_defaults.items():
                defaults[key_of(pyname)] = value
        for key, value in cls._algo_defaults.items():
            if key not in defaults:
                raise TypeError(f"{cls.__name__}._algo_defaults: {key!r} is not a field")
            defaults[key] = freeze(value)
        self.defaults = defaults
        self.nested = {s.nest_under: s for s in cls._sections.values() if s.nest_under is not None}


class ConfigBase:
    """Declares a config's state for the mixins; ``AlgorithmConfig`` holds the slots and
    gives the class attributes their values."""

    __slots__ = ()

    algo_name: ClassVar[str | None]
    #: True for off-policy algorithms: train_batch_size is then the replayed minibatch.
    _replays: ClassVar[bool] = False
    #: Whether ``rollout_fragment_length="auto"`` is ``n_step`` (DQN's and SAC's rule in RLlib)
    #: rather than a train batch's share of each sub-env.
    _auto_fragment_is_n_step: ClassVar[bool] = False
    #: Whether the optimizers take their learning rates from keys of their own (SAC, DDPG),
    #: so that ``lr`` may be None.
    _own_learning_rates: ClassVar[bool] = False
    _sections: ClassVar[dict[str, Section]]
    _algo_defaults: ClassVar[dict[str, Any]]

    #: Field values by config key, frozen.
    _values: dict[str, Any]
    #: Inert reference keys that were given (see ``rlconf.inert_keys``), by config key.
    _inert: dict[str, Any]
    _frozen: bool

    @classmethod
    def _info(cls) -> _ClassInfo:
        # Looked up in the class's own __dict__: a subclass with other sections must not
        # reuse its parent's cache.
        info = cls.__dict__.get("_info_cache")
        if info is None:
            info = _ClassInfo(cls)
            type.__setattr__(cls, "_info_cache", info)
        return info

    @classmethod
    def _class_defaults(cls) -> dict[str, Any]:
        return cls._info().defaults

    @classmethod
    def field_names(cls) -> list[str]:
        """Every config key of this class, in section order."""
        return list(cls._info().section_of_key)

    def _store(self, validated: Mapping[str, Any]) -> None:
        """Keep validated values (by config key): fields, and given inert reference keys."""
        for key, value in validated.items():
            (self._inert if key in INERT_KEYS else self._values)[key] = value

    def _check_unfrozen(self, where: str) -> None:
        if self._frozen:
            raise ConfigError.single(
                where,
                "config",
                "is frozen and can't be changed; call copy() for an unfrozen copy",
            )
