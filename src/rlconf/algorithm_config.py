"""``AlgorithmConfig``: the fluent, validated config every algorithm config builds on."""

from __future__ import annotations

import copy as _copy
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Literal, Self

from typing_extensions import Unpack

from rlconf import json_codec, search_space
from rlconf.errors import ConfigError, FieldIssue, short_repr
from rlconf.field_validation import validate_section
from rlconf.fluent import NOT_SET, NotSet, fluent
from rlconf.frozen import FrozenDict, freeze, thaw
from rlconf.inert_keys import INERT_KEYS, inert_settings
from rlconf.policy_spec import PolicySpec
from rlconf.section import Section, key_of, pyname_of
from rlconf.sections.callbacks import CALLBACKS, CallbacksArgs
from rlconf.sections.debugging import DEBUGGING, DebuggingArgs
from rlconf.sections.environment import ENVIRONMENT, EnvironmentArgs
from rlconf.sections.evaluation import EVALUATION, EvaluationArgs
from rlconf.sections.exploration import EXPLORATION, ExplorationArgs
from rlconf.sections.fault_tolerance import FAULT_TOLERANCE, FaultToleranceArgs
from rlconf.sections.framework import FRAMEWORK, FrameworkArgs
from rlconf.sections.multi_agent import MULTI_AGENT, MultiAgentArgs
from rlconf.sections.offline_data import OFFLINE_DATA, OfflineDataArgs
from rlconf.sections.python_environment import PYTHON_ENVIRONMENT, PythonEnvironmentArgs
from rlconf.sections.reporting import REPORTING, ReportingArgs
from rlconf.sections.resources import RESOURCES, ResourcesArgs
from rlconf.sections.rollouts import ROLLOUTS, RolloutsArgs
from rlconf.sections.training import TRAINING, TrainingArgs
from rlconf.unknown_keys import DROPPED_KEYS, did_you_mean

DEFAULT_POLICY_ID = "default_policy"


class _ClassInfo:
    """What a config class derives from its sections, computed once per class."""

    def __init__(self, cls: type[AlgorithmConfig]) -> None:
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


class AlgorithmConfig:
    """A validated, fluent config of an RL algorithm.

    Each method sets one section (``.training(lr=...)``, ``.rollouts(num_workers=...)``) and
    returns the config; a bad value raises :class:`ConfigError` at that call. Values read as
    attributes (``config.lr``) or items (``config["lr"]``), and are set the same two ways
    (``config["lambda"] = 0.9`` is validated like ``.training(lambda_=0.9)``); ``to_dict()``
    gives the reference's flat dict.

    Reference keys that rlconf accepts only at their "off" value (``eager_tracing: False``,
    see ``rlconf.inert_keys``) are kept apart from the fields: ``to_dict()`` gives them back,
    and building the algorithm names them in a warning.
    """

    __slots__ = ("_frozen", "_inert", "_values")

    algo_name: ClassVar[str | None] = None
    _sections: ClassVar[dict[str, Section]] = {
        s.method: s
        for s in (
            ENVIRONMENT,
            FRAMEWORK,
            ROLLOUTS,
            TRAINING,
            RESOURCES,
            EVALUATION,
            EXPLORATION,
            MULTI_AGENT,
            CALLBACKS,
            FAULT_TOLERANCE,
            REPORTING,
            DEBUGGING,
            OFFLINE_DATA,
            PYTHON_ENVIRONMENT,
        )
    }
    #: Defaults of this algorithm that differ from the sections' (by config key).
    _algo_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._info().defaults))
        object.__setattr__(self, "_inert", {})
        object.__setattr__(self, "_frozen", False)

    # ----------------------------------------------------------------- class information

    @classmethod
    def _info(cls) -> _ClassInfo:
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

    # ------------------------------------------------------------------- fluent methods

    @fluent
    def environment(
        self, /, env: str | type[Any] | NotSet | None = NOT_SET, **kwargs: Unpack[EnvironmentArgs]
    ) -> Self:
        return self._set("environment", dict(kwargs), env=env)

    @fluent
    def framework(
        self, /, framework: Literal["torch"] | NotSet = NOT_SET, **kwargs: Unpack[FrameworkArgs]
    ) -> Self:
        return self._set("framework", dict(kwargs), framework=framework)

    @fluent
    def rollouts(self, /, **kwargs: Unpack[RolloutsArgs]) -> Self:
        return self._set("rollouts", dict(kwargs))

    @fluent
    def training(self, /, **kwargs: Unpack[TrainingArgs]) -> Self:
        return self._set("training", dict(kwargs))

    @fluent
    def resources(self, /, **kwargs: Unpack[ResourcesArgs]) -> Self:
        return self._set("resources", dict(kwargs))

    @fluent
    def evaluation(self, /, **kwargs: Unpack[EvaluationArgs]) -> Self:
        return self._set("evaluation", dict(kwargs))

    @fluent
    def exploration(self, /, **kwargs: Unpack[ExplorationArgs]) -> Self:
        return self._set("exploration", dict(kwargs))

    @fluent
    def multi_agent(self, /, **kwargs: Unpack[MultiAgentArgs]) -> Self:
        return self._set("multi_agent", dict(kwargs))

    @fluent
    def callbacks(
        self,
        /,
        callbacks: type[Any] | str | NotSet | None = NOT_SET,
        **kwargs: Unpack[CallbacksArgs],
    ) -> Self:
        return self._set("callbacks", dict(kwargs), callbacks=callbacks)

    @fluent
    def fault_tolerance(self, /, **kwargs: Unpack[FaultToleranceArgs]) -> Self:
        return self._set("fault_tolerance", dict(kwargs))

    @fluent
    def reporting(self, /, **kwargs: Unpack[ReportingArgs]) -> Self:
        return self._set("reporting", dict(kwargs))

    @fluent
    def debugging(self, /, **kwargs: Unpack[DebuggingArgs]) -> Self:
        return self._set("debugging", dict(kwargs))

    @fluent
    def offline_data(self, /, **kwargs: Unpack[OfflineDataArgs]) -> Self:
        return self._set("offline_data", dict(kwargs))

    @fluent
    def python_environment(self, /, **kwargs: Unpack[PythonEnvironmentArgs]) -> Self:
        return self._set("python_environment", dict(kwargs))

    # ------------------------------------------------------------------------- setting

    def _set(self, method: str, kwargs: dict[str, Any], **positional: Any) -> Self:
        where = f"{type(self).__name__}.{method}()"
        for name, value in positional.items():
            if value is not NOT_SET:
                kwargs[name] = value
        self._check_unfrozen(where)
        section = self._sections[method]
        validated, issues = self._validate_for_section(section, kwargs, where, "")
        if issues:
            raise ConfigError(where, issues)
        self._store(validated)
        return self

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

    def _validate_for_section(
        self,
        section: Section,
        given: Mapping[str, Any],
        where: str,
        prefix: str,
    ) -> tuple[dict[str, Any], list[FieldIssue]]:
        """Validate keyword arguments of one fluent method; results by config key."""
        known: dict[str, Any] = {}
        inert: dict[str, Any] = {}
        issues: list[FieldIssue] = []
        names = set(section.names)
        for pyname, value in given.items():
            if pyname in names:
                known[pyname] = value
            elif pyname in INERT_KEYS and INERT_KEYS[pyname].method == section.method:
                inert.update(self._check_inert(pyname, value, prefix, issues))
            else:
                issues.append(self._unknown_key_issue(prefix + pyname, pyname, section))
        validated, issues = self._finish(section, known, issues, prefix, self._values)
        validated.update(inert)
        return validated, issues

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
        hint = did_you_mean(key, pool)
        allowed = ", ".join(section.ordered_names) if section is not None else ""
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
        for key, value in data.items():
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
        return result, issues

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

    # ------------------------------------------------------------------------- reading

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: fields, never methods or slots.
        if name.startswith("__"):
            raise AttributeError(name)
        values = object.__getattribute__(self, "_values")
        key = key_of(name)
        if key in values:
            return values[key]
        inert = object.__getattribute__(self, "_inert")
        if key in inert:
            return inert[key]
        hint = did_you_mean(name, [pyname_of(k) for k in values])
        raise AttributeError(
            f"{type(self).__name__} has no field {name!r}" + (f"; {hint}" if hint else "")
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name in AlgorithmConfig.__slots__:
            object.__setattr__(self, name, value)
            return
        self._assign(name, value, f"{type(self).__name__}.{name} = ...")

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

    def __getitem__(self, key: str) -> Any:
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
        assert isinstance(other, AlgorithmConfig)
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
        """The reference's flat config dict (multi-agent keys under ``"multiagent"``).

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
        """The reference keys given at their "off" value, which have no effect in rlconf, by
        path: ``{"eager_tracing": False, "model.use_lstm": False}``."""
        return inert_settings(thaw(self._inert), thaw(self._values["model"]))

    # --------------------------------------------------------------- JSON and schema

    def to_json(self, indent: int | None = 2) -> str:
        """Lossless JSON: classes and functions by import path, spaces by description."""
        encoded = json_codec.encode(self.to_dict(), f"{type(self).__name__}.to_json()")
        if self.algo_name is not None:
            encoded = {"$algorithm": self.algo_name, **encoded}
        return json.dumps(encoded, indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> AlgorithmConfig:
        """Rebuild a config from ``to_json()`` output, on the algorithm's config class."""
        where = f"{cls.__name__}.from_json()"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError.single(where, "json", f"is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError.single(
                where, "json", "must be a JSON object", value=data, has_value=True
            )
        target: type[AlgorithmConfig] = cls
        algo = data.pop("$algorithm", None)
        if algo is not None:
            from rlconf.registry import get_config_class

            target = get_config_class(algo)
            if not issubclass(target, cls):
                raise ConfigError.single(
                    where,
                    "$algorithm",
                    f"names a {target.__name__}, not a {cls.__name__}",
                    value=algo,
                    has_value=True,
                )
        return target.from_dict(json_codec.decode(data, where))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """JSON Schema (draft 2020-12) of this class's flat dict / JSON form."""
        from rlconf.schema import config_json_schema

        schema = config_json_schema(cls)
        for key, inert in INERT_KEYS.items():
            schema["properties"][key] = {
                "enum": list(inert.accepted),
                "description": inert.description,
            }
        return schema

    # ----------------------------------------------------------- validation lifecycle

    def validate(self) -> Self:
        """Run the cross-field checks; raise one ConfigError listing every violation."""
        issues = self._cross_field_issues()
        if issues:
            raise ConfigError(f"{type(self).__name__}.validate()", issues)
        return self

    def _plain(self, key: str) -> Any:
        """The value of ``key``, or NOT_SET when it holds a search space (skip such checks)."""
        value = self._values[key]
        return NOT_SET if search_space.is_search_space(value) else value

    def _cross_field_issues(self) -> list[FieldIssue]:
        v = self._plain
        issues: list[FieldIssue] = []
        train, fragment = v("train_batch_size"), v("rollout_fragment_length")
        # "auto" is never longer than train_batch_size.
        if NOT_SET not in (train, fragment) and fragment != "auto" and train < fragment:
            issues.append(
                FieldIssue(
                    "train_batch_size",
                    f"must be >= rollout_fragment_length ({fragment})",
                    train,
                )
            )
        duration, parallel = v("evaluation_duration"), v("evaluation_parallel_to_training")
        if duration == "auto" and parallel is False:
            issues.append(
                FieldIssue(
                    "evaluation_duration",
                    "'auto' needs evaluation_parallel_to_training=True",
                    duration,
                )
            )
        eval_workers = v("evaluation_num_workers")
        if parallel is True and eval_workers == 0:
            issues.append(
                FieldIssue(
                    "evaluation_parallel_to_training",
                    "needs evaluation_num_workers > 0 (evaluation can't overlap training in "
                    "the training process)",
                    parallel,
                )
            )
        if v("ignore_worker_failures") is True and v("recreate_failed_workers") is True:
            issues.append(
                FieldIssue(
                    "recreate_failed_workers",
                    "can't be combined with ignore_worker_failures=True; "
                    "choose one way of handling failed workers",
                    True,
                )
            )
        if v("_fake_gpus") is True and v("num_gpus") == 0:
            issues.append(FieldIssue("_fake_gpus", "only has an effect with num_gpus > 0", True))
        issues.extend(self._multi_agent_issues())
        return issues

    def _multi_agent_issues(self) -> list[FieldIssue]:
        policies = self._plain("policies")
        if policies is NOT_SET:
            return []
        issues = []
        to_train = self._plain("policies_to_train")
        if isinstance(to_train, list):
            unknown = [p for p in to_train if p not in policies]
            if unknown and policies:
                issues.append(
                    FieldIssue(
                        "policies_to_train",
                        f"names policies that are not in policies: {unknown}",
                        to_train,
                        allowed="ids among " + ", ".join(map(repr, policies)),
                    )
                )
            elif unknown:
                issues.append(
                    FieldIssue(
                        "policies_to_train",
                        f"names {unknown} but policies is empty "
                        f"(the only policy is {DEFAULT_POLICY_ID!r})",
                        to_train,
                    )
                )
        if (
            policies
            and self._plain("policy_mapping_fn") is None
            and (DEFAULT_POLICY_ID not in policies)
        ):
            issues.append(
                FieldIssue(
                    "policy_mapping_fn",
                    "is None, which maps every agent to "
                    f"{DEFAULT_POLICY_ID!r}, but policies has no such policy",
                    None,
                    allowed="a function agent_id -> policy id",
                )
            )
        return issues

    def get_rollout_fragment_length(self) -> int:
        """Steps per sub-env in each ``sample()`` fragment: ``rollout_fragment_length``, or for
        ``"auto"`` ``ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker)``, so
        that one round of fragments from every worker fills a train batch."""
        fragment = self["rollout_fragment_length"]
        if fragment != "auto":
            return int(fragment)
        sizes = {k: self[k] for k in ("train_batch_size", "num_workers", "num_envs_per_worker")}
        spaces = [k for k, value in sizes.items() if search_space.is_search_space(value)]
        if spaces:
            raise ConfigError.single(
                f"{type(self).__name__}.get_rollout_fragment_length()",
                "rollout_fragment_length",
                f"'auto' can't be resolved while {', '.join(spaces)} is a search space",
                value=fragment,
                has_value=True,
            )
        per_round = max(1, int(sizes["num_workers"])) * int(sizes["num_envs_per_worker"])
        return math.ceil(int(sizes["train_batch_size"]) / per_round)

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
        from rlconf.registry import get_algorithm_class

        if self.algo_name is None:
            raise ConfigError.single(
                f"{type(self).__name__}.build()",
                "algorithm",
                "is not set: a plain AlgorithmConfig has no algorithm to build",
                allowed="an algorithm's config class, e.g. PPOConfig, PGConfig, A2CConfig",
            )
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
    cls: type[AlgorithmConfig],
    values: dict[str, Any],
    frozen: bool,
    inert: dict[str, Any] | None = None,
) -> AlgorithmConfig:
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


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # array-valued spaces and the like compare elementwise
        return a is b
