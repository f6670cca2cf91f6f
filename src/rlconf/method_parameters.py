"""The parameters of a config class's fluent method: its section's fields, then the other names
of keys its section declares (``Section.aliases``) and the names it also takes
(``Section.keywords``), each where the class has its key.

One list for the three places that write a method's signature: the runtime signature and help
(``rlconf.fluent``), the generated source that editors and type checkers read
(``rlconf.fluent_codegen``), and the validation that routes each keyword to the section that
declares its key (``AlgorithmConfig._set``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconf.frozen import thaw
from rlconf.inert_keys import INERT_KEYS, InertKey
from rlconf.key_aliases import KEY_ALIASES, canonical_key
from rlconf.section import Section, key_of, pyname_of

if TYPE_CHECKING:
    from rlconf.config_base import ConfigBase


@dataclass(frozen=True)
class MethodParameter:
    """One keyword of a fluent method: the config ``key`` it sets, the section that declares that
    key (``None`` for an inert key, which ``inert`` describes) and its one-line doc."""

    name: str
    key: str
    section: Section | None
    description: str
    positional: bool = False
    inert: InertKey | None = None

    @property
    def field(self) -> str:
        """The key's Python name among its section's fields."""
        return pyname_of(self.key)

    @property
    def plain_type(self) -> Any:
        if self.section is not None:
            # Another name its section types itself (a value turned into the key's) is that.
            typed = self.name if self.name in self.section.hints else self.field
            return self.section.plain_type(typed)
        assert self.inert is not None
        return functools.reduce(operator.or_, [type(v) for v in self.inert.accepted])

    @property
    def type_text(self) -> str:
        """The source text of an inert key's type (a field's is read from its section)."""
        assert self.inert is not None
        names = ("None" if v is None else type(v).__name__ for v in self.inert.accepted)
        return " | ".join(dict.fromkeys(names))

    def default(self, defaults: Mapping[str, Any]) -> Any:
        """The value shown as the default: the class's (``defaults`` by config key), or the
        first value an inert key accepts."""
        if self.inert is not None:
            return self.inert.accepted[0]
        alias = KEY_ALIASES.get(self.name)
        if alias is not None and alias.convert is not None:
            return None  # a value turned into the key's: not given unless given
        return thaw(defaults[self.key])


def _about_keyword(name: str, key: str, section: Section) -> str:
    described = section.description(pyname_of(key))
    own = section.description(name) if name != key and name in section.hints else ""
    if own:
        return own
    if name != key:
        about = KEY_ALIASES[name].describe()
        return f"{about[0].upper()}{about[1:]} (one setting): {described}"
    return f"As in {section.method}() (one setting): {described}"


def method_parameters(cls: type[ConfigBase], method: str) -> list[MethodParameter]:
    """The keywords of ``cls.<method>()`` in signature order."""
    section = cls._sections[method]
    params = [
        MethodParameter(
            name,
            key_of(name),
            section,
            section.description(name),
            positional=name in section.positional,
        )
        for name in section.ordered_names
    ]
    owners = cls._info().section_of_key
    taken = set(section.names)
    for name in dict.fromkeys((*section.aliases, *section.keywords)):
        key = canonical_key(name)
        owner = owners.get(key)
        if name in taken:
            continue
        if owner is not None:
            params.append(MethodParameter(name, key, owner, _about_keyword(name, key, owner)))
        elif key in INERT_KEYS:
            inert = INERT_KEYS[key]
            params.append(MethodParameter(name, key, None, inert.description, inert=inert))
    return params


def routed_keys(cls: type[ConfigBase], method: str) -> dict[str, MethodParameter]:
    """The keywords of ``cls.<method>()`` that set a key its section doesn't declare (another
    section's, or an inert key), by that key."""
    section = cls._sections[method]
    if not section.keywords and not section.aliases:
        return {}
    own = {key_of(name) for name in section.names}
    return {p.key: p for p in method_parameters(cls, method) if p.key not in own}
