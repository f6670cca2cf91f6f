"""``ConfigRouting``: validating given keys and routing them to their sections: the checks the
fluent methods share, and every dict-shaped input (``from_dict``, ``update_from_dict``,
``overrides``, item and attribute assignment, nested ``evaluation_config`` / policy overrides)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from rlconf import search_space
from rlconf.config_base import ConfigBase
from rlconf.errors import ConfigError, FieldIssue
from rlconf.field_validation import validate_section
from rlconf.frozen import FrozenDict, freeze, thaw
from rlconf.inert_keys import INERT_KEYS
from rlconf.key_aliases import KEY_ALIASES, resolve_aliases
from rlconf.method_parameters import method_parameters
from rlconf.new_stack_names import per_learner_issues
from rlconf.policy_spec import PolicySpec
from rlconf.section import Section, key_of, pyname_of
from rlconf.unknown_keys import DROPPED_KEYS, did_you_mean


class ConfigRouting(ConfigBase):
    """Key checks shared by every input path, and the dict-shaped paths themselves."""

    __slots__ = ()

    @staticmethod
    def _check_inert(key: str, value: Any, prefix: str, issues: list[FieldIssue]) -> dict[str, Any]:
        """``{key: value}`` when ``value`` is one the inert key accepts; else an issue."""
        inert = INERT_KEYS[key]
        if inert.accepts(value):
            return {key: freeze(value)}
        issues.append(FieldIssue(prefix + key, inert.problem, value, allowed=inert.allowed))
        return {}

    @classmethod
    def _finish(
        cls,
        section: Section,
        known: dict[str, Any],
        issues: list[FieldIssue],
        prefix: str,
        current: Mapping[str, Any] | None,
    ) -> tuple[dict[str, Any], list[FieldIssue]]:
        validated, field_issues = validate_section(section, known, prefix, current)
        issues.extend(field_issues)
        result: dict[str, Any] = {}
        for pyname, value in validated.items():
            key = key_of(pyname)
            if key == "evaluation_config" and not search_space.is_search_space(value):
                value, more = cls._validate_overrides_dict(value, prefix + key + ".")
                issues.extend(more)
            elif key == "policies" and not search_space.is_search_space(value):
                value, more = cls._validate_policy_configs(value, prefix + key + ".")
                issues.extend(more)
            result[key] = freeze(value)
        return result, issues

    @classmethod
    def _validate_policy_configs(
        cls, policies: dict[str, PolicySpec], prefix: str
    ) -> tuple[dict[str, PolicySpec], list[FieldIssue]]:
        issues: list[FieldIssue] = []
        checked = {}
        for policy_id, spec in policies.items():
            if spec.config:
                overrides, more = cls._validate_overrides_dict(
                    spec.config, f"{prefix}{policy_id}.config."
                )
                issues.extend(more)
                spec = PolicySpec(
                    spec.policy_class, spec.observation_space, spec.action_space, overrides
                )
            checked[policy_id] = spec
        return checked, issues

    @classmethod
    def _unknown_key_issue(cls, label: str, key: str, section: Section | None = None) -> FieldIssue:
        info = cls._info()
        name = cls.__name__
        owner = info.section_of_key.get(key_of(key))
        if section is not None and owner is not None:
            return FieldIssue(
                label,
                f"is set by {name}.{owner.method}(), not {name}.{section.method}()",
                has_value=False,
            )
        if key in DROPPED_KEYS:
            return FieldIssue(label, f"not supported: {DROPPED_KEYS[key]}", has_value=False)
        inert = INERT_KEYS.get(key)
        if inert is not None:
            takes = f"{name}.{inert.method}()" if inert.method else "dict input (from_dict)"
            return FieldIssue(
                label,
                f"is accepted by {takes} only, as {inert.values}, which has no effect "
                f"({inert.why})",
                has_value=False,
            )
        from rlconf.registry import config_class_with_field

        other = config_class_with_field(key)
        if other is not None and other is not cls:
            return FieldIssue(
                label,
                f"unknown key for {name}; it is a {other.__name__} setting",
                has_value=False,
            )
        pool = (
            [pyname_of(k) for k in info.section_of_key] if section is None else list(section.names)
        )
        if section is not None:
            pool += [p.name for p in method_parameters(cls, section.method)]
        pool += [
            name
            for name, alias in KEY_ALIASES.items()
            if not alias.deprecated and pyname_of(alias.key) in pool
        ]
        hint = did_you_mean(key, list(dict.fromkeys(pool)))
        allowed = (
            ", ".join(p.name for p in method_parameters(cls, section.method))
            if section is not None
            else ""
        )
        return FieldIssue(
            label,
            "unknown key" + (f" ({hint})" if hint else ""),
            has_value=False,
            allowed=allowed,
        )

    # --------------------------------------------------------- dict-shaped input paths

    @classmethod
    def _route(
        cls,
        data: Any,
        prefix: str,
        current: Mapping[str, Any] | None,
        *,
        allow_evaluation_config: bool = True,
    ) -> tuple[dict[str, Any], list[FieldIssue]]:
        """Validate a flat reference dict (``"multiagent"`` nested); results by config key."""
        info = cls._info()
        groups: dict[str, dict[str, Any]] = {}
        issues: list[FieldIssue] = []
        result_inert: dict[str, Any] = {}
        if not isinstance(data, Mapping):
            return {}, [
                FieldIssue(
                    prefix.rstrip(".") or "config",
                    "must be a dict",
                    data,
                    allowed="dict of config keys",
                )
            ]
        resolved = resolve_aliases(data, prefix)
        issues.extend(resolved.issues)
        issues.extend(per_learner_issues(resolved.given_as, resolved.values, current, prefix))
        for key, value in resolved.values.items():
            if not isinstance(key, str):
                issues.append(
                    FieldIssue(prefix + repr(key), "keys must be strings", has_value=False)
                )
                continue
            nested = info.nested.get(key)
            if nested is not None:
                if not isinstance(value, Mapping):
                    issues.append(FieldIssue(prefix + key, "must be a dict", value))
                    continue
                for sub_key, sub_value in value.items():
                    if info.section_of_key.get(str(sub_key)) is nested:
                        groups.setdefault(nested.method, {})[pyname_of(sub_key)] = sub_value
                    else:
                        issues.append(
                            cls._unknown_key_issue(f"{prefix}{key}.{sub_key}", str(sub_key))
                        )
                continue
            full_key = key_of(key)
            section = info.section_of_key.get(full_key)
            if section is None and full_key in INERT_KEYS:
                result_inert.update(cls._check_inert(full_key, value, prefix, issues))
                continue
            if section is None or (full_key == "evaluation_config" and not allow_evaluation_config):
                issue = cls._unknown_key_issue(prefix + key, key)
                if section is not None:
                    issue = FieldIssue(
                        prefix + key, "can't be overridden inside overrides", has_value=False
                    )
                issues.append(issue)
                continue
            groups.setdefault(section.method, {})[pyname_of(full_key)] = value
        result: dict[str, Any] = {}
        for method, given in groups.items():
            validated, more = cls._finish(cls._sections[method], given, [], prefix, current)
            result.update(validated)
            issues.extend(more)
        result.update(result_inert)
        return result, resolved.relabel(issues, prefix)

    @classmethod
    def _validate_overrides_dict(
        cls, data: Mapping[str, Any], prefix: str
    ) -> tuple[FrozenDict, list[FieldIssue]]:
        validated, issues = cls._route(data, prefix, None, allow_evaluation_config=False)
        return FrozenDict(validated), issues

    @classmethod
    def overrides(cls, **kwargs: Any) -> dict[str, Any]:
        """A validated partial config, e.g. for ``evaluation_config`` or a PolicySpec.

        Keywords are the fluent methods' keywords (``lambda_`` for ``"lambda"``); the result
        is keyed by config key.
        """
        validated, issues = cls._route(kwargs, "", None, allow_evaluation_config=False)
        if issues:
            raise ConfigError(f"{cls.__name__}.overrides()", issues)
        return thaw(validated)  # type: ignore[no-any-return]

    def update_from_dict(self, config_dict: Mapping[str, Any]) -> Self:
        """Set many fields from a flat reference dict; all or nothing."""
        where = f"{type(self).__name__}.update_from_dict()"
        self._check_unfrozen(where)
        validated, issues = self._route(config_dict, "", self._values)
        if issues:
            raise ConfigError(where, issues)
        self._store(validated)
        return self

    @classmethod
    def from_dict(cls, config_dict: Mapping[str, Any]) -> Self:
        """A new config of this class from a flat reference dict."""
        config = cls()
        validated, issues = cls._route(config_dict, "", config._values)
        if issues:
            raise ConfigError(f"{cls.__name__}.from_dict()", issues)
        config._store(validated)
        return config

    # ------------------------------------------------------------------ item assignment

    def __setitem__(self, key: str, value: Any) -> None:
        self._assign(key, value, f"{type(self).__name__}[{key!r}] = ...")

    def _assign(self, key: str, value: Any, where: str) -> None:
        """One key of the flat dict (``"multiagent"`` takes a partial dict), validated as
        ``update_from_dict`` validates it."""
        self._check_unfrozen(where)
        validated, issues = self._route({key: value}, "", self._values)
        if issues:
            raise ConfigError(where, issues)
        self._store(validated)
