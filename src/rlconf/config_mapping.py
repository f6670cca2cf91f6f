"""``ConfigMapping``: reading a config as attributes and as the reference's flat dict
(``config.lr``, ``config["lr"]``, ``to_dict()``), plus equality and repr."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rlconf.config_base import ConfigBase
from rlconf.errors import short_repr
from rlconf.frozen import FrozenDict, thaw
from rlconf.inert_keys import inert_settings
from rlconf.key_aliases import canonical_key
from rlconf.section import key_of, pyname_of
from rlconf.unknown_keys import did_you_mean


class ConfigMapping(ConfigBase):
    """The read side of a config: attributes, the mapping protocol and ``to_dict()``."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: fields, never methods or slots.
        if name.startswith("__"):
            raise AttributeError(name)
        values = object.__getattribute__(self, "_values")
        key = canonical_key(key_of(name))
        if key in values:
            return values[key]
        inert = object.__getattribute__(self, "_inert")
        if key in inert:
            return inert[key]
        hint = did_you_mean(name, [pyname_of(k) for k in values])
        raise AttributeError(
            f"{type(self).__name__} has no field {name!r}" + (f"; {hint}" if hint else "")
        )

    def __getitem__(self, key: str) -> Any:
        key = canonical_key(key)
        nested = self._info().nested.get(key)
        if nested is not None:
            return FrozenDict({key_of(n): self._values[key_of(n)] for n in nested.ordered_names})
        if key in self._values:
            return self._values[key]
        if key in self._inert:
            return self._inert[key]
        hint = did_you_mean(key, list(self._values))
        raise KeyError(f"{type(self).__name__} has no key {key!r}" + (f"; {hint}" if hint else ""))

    @property
    def callbacks_class(self) -> Any:
        """The ``"callbacks"`` value (``config.callbacks`` is the setter method)."""
        return self._values["callbacks"]

    @property
    def framework_str(self) -> str:
        """The ``"framework"`` value (``config.framework`` is the setter method)."""
        return str(self._values["framework"])

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            key = canonical_key(key)
        return key in self._values or key in self._info().nested or key in self._inert

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> list[str]:
        return list(self.to_dict())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, ConfigBase)
        return bool(self._values == other._values and self._inert == other._inert)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        defaults = self._info().defaults
        changed = [
            f"{pyname_of(k)}={short_repr(v)}"
            for k, v in self._values.items()
            if not _same(v, defaults[k])
        ]
        changed += [f"{k}={short_repr(v)}" for k, v in self._inert.items()]
        return f"{type(self).__name__}({', '.join(changed)})"

    def to_dict(self) -> dict[str, Any]:
        """The reference's flat config dict (multi-agent keys under ``"multiagent"``); each
        setting under rlconf's key only (``min_sample_timesteps_per_reporting``, not also its
        RLlib 2.x name: ``rlconf.key_aliases``).

        The result is a plain, mutable copy; search spaces stay in place, so it is a valid
        Tune ``param_space``.
        """
        out: dict[str, Any] = {}
        for section in self._sections.values():
            target = out
            if section.nest_under is not None:
                target = out.setdefault(section.nest_under, {})
            for pyname in section.ordered_names:
                key = key_of(pyname)
                target[key] = thaw(self._values[key])
        for key, value in self._inert.items():
            out[key] = thaw(value)
        return out

    def inert_settings(self) -> dict[str, Any]:
        """The reference keys given at a value that asks for nothing rlconf doesn't do anyway
        (they have no effect), by path: ``{"eager_tracing": False, "model.use_lstm": False}``."""
        return inert_settings(
            thaw(self._inert),
            thaw(self._values["model"]),
            thaw(self._values.get("replay_buffer_config")),
        )


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # array-valued spaces and the like compare elementwise
        return a is b
