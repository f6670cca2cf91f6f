"""Validate the values given to one section: types, constraints, search spaces, unknown keys.

Pydantic does the type and constraint checks; this module turns its errors into
:class:`FieldIssue` entries that name the field, the value and what is allowed.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, get_args

import typing_extensions
from pydantic import ValidationError

from rlconf import search_space
from rlconf.default_model_config import as_model_dict
from rlconf.errors import FieldIssue
from rlconf.replay_buffer_config import with_buffer_key_names
from rlconf.schema_text import describe
from rlconf.section import Section, key_of, strip_annotated
from rlconf.unknown_keys import did_you_mean

#: Fields whose dict value updates the current one instead of replacing it.
MERGED_FIELDS = frozenset(
    {
        "model",
        "exploration_config",
        "replay_buffer_config",
        "q_model_config",
        "policy_model_config",
        "optimization",
    }
)


def allowed_text(section: Section, pyname: str) -> str:
    return describe(section.field_schema(pyname), section.json_schema.get("$defs"))


def _typeddict_at(section: Section, loc: tuple[Any, ...]) -> Any:
    """The TypedDict that the nested location ``loc`` (below a field) points into, if any."""
    tp: Any = section.hints.get(loc[0]) if loc else None
    for step in loc[1:]:
        tp = _unwrap_typeddict(tp)
        if tp is None:
            return None
        tp = typing.get_type_hints(tp, include_extras=True).get(step)
    return _unwrap_typeddict(tp)


def _unwrap_typeddict(tp: Any) -> Any:
    tp = strip_annotated(tp)
    if typing_extensions.is_typeddict(tp):
        return tp
    for arg in get_args(tp):
        found = _unwrap_typeddict(arg)
        if found is not None:
            return found
    return None


_TYPE_TAGS = frozenset(
    {"none", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "callable", "any"}
)


def _is_union_member_tag(part: Any) -> bool:
    """pydantic adds the union member it tried (``'str'``, ``'is-subclass[Any]'``, ...) to an
    error's location; field names never contain brackets or dashes."""
    return isinstance(part, str) and ("[" in part or "-" in part or part in _TYPE_TAGS)


def pydantic_issues(
    section: Section, exc: ValidationError, given: Mapping[str, Any], prefix: str
) -> list[FieldIssue]:
    """One issue per failing location, in the order the fields were given.

    pydantic reports one error per union member tried; those share a location once the
    member tags are dropped, and become one issue.
    """
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for error in exc.errors():
        path = tuple(p for p in error["loc"] if not _is_union_member_tag(p))
        groups.setdefault(path, []).append(error)
    defs = section.json_schema.get("$defs")
    issues = []
    for pyname in given:
        for path, errors in groups.items():
            if path[0] != pyname:
                continue
            label = ".".join([prefix + key_of(pyname), *map(str, path[1:])])
            if errors[0]["type"] == "extra_forbidden":
                issues.append(_nested_unknown_key(section, path, label))
                continue
            messages = list(dict.fromkeys(_message(e) for e in errors))
            problem = messages[0] if len(messages) == 1 else "is none of the allowed types"
            value = given[pyname] if len(path) == 1 else errors[0]["input"]
            schema = _schema_at(section, path)
            allowed = describe(schema, defs) if schema else ""
            issues.append(FieldIssue(label, problem, value, allowed=allowed))
    return issues


def _nested_unknown_key(section: Section, path: tuple[Any, ...], label: str) -> FieldIssue:
    container = _typeddict_at(section, path[:-1])
    known = list(typing.get_type_hints(container)) if container is not None else []
    bad_key = str(path[-1])
    hint = did_you_mean(bad_key, known)
    return FieldIssue(
        label,
        "unknown key" + (f" ({hint})" if hint else ""),
        has_value=False,
        allowed="keys " + ", ".join(known) if known else "",
    )


def _schema_at(section: Section, loc: tuple[Any, ...]) -> dict[str, Any] | None:
    """The JSON Schema of a nested location, following ``$ref`` into ``$defs``."""
    defs = section.json_schema.get("$defs", {})
    schema: dict[str, Any] | None = section.field_schema(str(loc[0]))
    for step in loc[1:]:
        while schema is not None and "$ref" in schema:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1])
        if schema is None:
            return None
        if isinstance(step, int):
            # Into the list member of a union (a list or None, ...).
            lists = [s for s in schema.get("anyOf", []) if s.get("type") == "array"]
            schema = (lists[0] if len(lists) == 1 else schema).get("items")
        else:
            schema = schema.get("properties", {}).get(step)
    return schema


def _message(error: Mapping[str, Any]) -> str:
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def search_space_issues(
    section: Section,
    pyname: str,
    space: Any,
    prefix: str,
    merge_with: Mapping[str, Any] | None,
) -> list[FieldIssue]:
    """Validate every candidate a search space can produce, like a plain value."""
    label = prefix + key_of(pyname)
    if search_space.is_grid_search(space) and not search_space.is_valid_grid(space):
        return [FieldIssue(label, "grid_search needs a non-empty list of values", space)]
    issues = []
    for candidate in search_space.candidates(space):
        value = _merged(pyname, candidate, merge_with)
        try:
            section.adapter.validate_python({pyname: value})
        except ValidationError as exc:
            for issue in pydantic_issues(section, exc, {pyname: candidate}, prefix):
                issues.append(
                    FieldIssue(
                        issue.field,
                        f"search-space candidate {candidate!r}: {issue.problem}",
                        space,
                        allowed=issue.allowed,
                    )
                )
    return issues


def _merged(pyname: str, value: Any, current: Mapping[str, Any] | None) -> Any:
    """A partial ``model`` / ``exploration_config`` dict, completed from the current one (a
    ``replay_buffer_config``'s new API stack keys renamed first, so that ``alpha`` replaces the
    current ``prioritized_replay_alpha``; a ``DefaultModelConfig`` is the dict of its fields)."""
    if pyname == "replay_buffer_config":
        value = with_buffer_key_names(value)
    value = as_model_dict(value)
    if current is None or pyname not in MERGED_FIELDS or not isinstance(value, Mapping):
        return value
    base = current.get(key_of(pyname))
    if not isinstance(base, Mapping):
        return value
    if pyname == "exploration_config" and "type" in value and value["type"] != base.get("type"):
        return value
    return {**base, **value}


def validate_section(
    section: Section,
    given: Mapping[str, Any],
    prefix: str,
    current: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], list[FieldIssue]]:
    """Check the known fields of ``given`` (by Python name) against ``section``.

    Returns the validated values by Python name (search spaces as given) and the issues.
    ``current`` (by config key) completes partial values of merged fields; overrides pass None
    so that they stay partial.
    """
    plain: dict[str, Any] = {}
    spaces: dict[str, Any] = {}
    for pyname, value in given.items():
        if search_space.is_search_space(value):
            spaces[pyname] = value
        else:
            plain[pyname] = _merged(pyname, value, current)
    issues: list[FieldIssue] = []
    validated: dict[str, Any] = {}
    if plain:
        try:
            validated = section.adapter.validate_python(plain)
        except ValidationError as exc:
            issues.extend(pydantic_issues(section, exc, {k: given[k] for k in plain}, prefix))
    for pyname, space in spaces.items():
        issues.extend(search_space_issues(section, pyname, space, prefix, current))
        validated[pyname] = space
    return validated, issues
