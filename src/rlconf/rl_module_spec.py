"""``RLModuleSpec`` and ``MultiRLModuleSpec``: RLlib's new API stack way of giving a policy
your own networks (``rl_module(rl_module_spec=...)``).

A spec holds the module class (a ``runtime.TorchRLModule`` subclass) or its import path
(``"pkg.mod:Class"`` or ``"pkg.mod.Class"``): rlconf never imports it; the runtime does when
it builds the policies, and a JSON or YAML config holds the path. ``model_config`` is the dict
the module receives as ``self.model_config`` (None: the config's ``model`` dict).
``MultiRLModuleSpec`` gives each policy of ``multi_agent(policies=...)`` its own spec: module
ids are policy ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BeforeValidator, WithJsonSchema

from rlconf.default_model_config import DefaultModelConfig
from rlconf.errors import ConfigError, FieldIssue, short_repr
from rlconf.frozen import freeze
from rlconf.importpath import ImportPathError, path_of, resolve, split
from rlconf.spaces import is_space

_WHERE = "RLModuleSpec(...)"
_BUILDS = "the runtime builds a policy's module once for acting and learning alike"


def _check_class(value: Any, name: str, where: str) -> None:
    if value is None or isinstance(value, type):
        return
    if isinstance(value, str):
        module, qualname = split(value)
        if module and qualname:
            return
    raise ConfigError.single(
        where,
        name,
        "is neither a class nor an import path",
        value=value,
        has_value=True,
        allowed="a class, 'package.module:Class' or 'package.module.Class'",
    )


def _refuse_true(value: Any, name: str, why: str) -> None:
    if value is not False:
        raise ConfigError.single(
            _WHERE,
            name,
            f"is taken as False only: {why}",
            value=value,
            has_value=True,
            allowed="False",
        )


@dataclass(frozen=True)
class RLModuleSpec:
    """One policy's module: ``module_class(observation_space=..., action_space=...,
    inference_only=False, model_config=..., catalog_class=...)``, built by the runtime with the
    policy's spaces (those given here must equal them)."""

    module_class: type[Any] | str | None = None
    observation_space: Any = None
    action_space: Any = None
    inference_only: bool = False
    learner_only: bool = False
    model_config: Mapping[str, Any] | DefaultModelConfig | None = None
    catalog_class: type[Any] | str | None = None

    def __post_init__(self) -> None:
        _check_class(self.module_class, "module_class", _WHERE)
        _check_class(self.catalog_class, "catalog_class", _WHERE)
        for name in ("observation_space", "action_space"):
            value = getattr(self, name)
            if value is not None and not is_space(value):
                raise ConfigError.single(
                    _WHERE,
                    name,
                    "is not a gymnasium space",
                    value=value,
                    has_value=True,
                    allowed="a gymnasium.spaces.Space, or None (the policy's own)",
                )
        _refuse_true(
            self.inference_only,
            "inference_only",
            f"{_BUILDS} (the acting copies hold the learner's weights, value heads included)",
        )
        _refuse_true(
            self.learner_only,
            "learner_only",
            f"{_BUILDS}; every module acts (a module of its own for learning only is not "
            "available)",
        )
        config = self.model_config
        if isinstance(config, DefaultModelConfig):
            config = config.to_dict()
        if config is not None:
            if not isinstance(config, Mapping) or not all(isinstance(k, str) for k in config):
                raise ConfigError.single(
                    _WHERE,
                    "model_config",
                    "is not a dict with string keys",
                    value=config,
                    has_value=True,
                    allowed="a dict, a DefaultModelConfig, or None (the config's model dict)",
                )
            object.__setattr__(self, "model_config", freeze(dict(config)))

    def model_dict(self) -> dict[str, Any] | None:
        """``model_config`` as a plain dict (None where not given)."""
        config = self.model_config
        if config is None:
            return None
        return config.to_dict() if isinstance(config, DefaultModelConfig) else dict(config)

    @property
    def module_path(self) -> str | None:
        """The import path of ``module_class`` (None without one); an ``ImportPathError`` for a
        class no path reaches (defined in a function or in ``__main__``)."""
        value = self.module_class
        return value if value is None or isinstance(value, str) else path_of(value)

    def resolved_module_class(self) -> type[Any]:
        """``module_class`` as a class (an import path imported); a ``ConfigError`` naming the
        path when it does not resolve to one."""
        return resolved_class(self.module_class, "module_class")

    def build(self) -> Any:
        """A module of ``module_class`` on this spec's spaces (both must be given), as RLlib's
        ``RLModuleSpec.build()``."""
        if self.observation_space is None or self.action_space is None:
            raise ConfigError.single(
                "RLModuleSpec.build()",
                "observation_space" if self.observation_space is None else "action_space",
                "is needed to build the module here (the runtime builds it with the policy's "
                "spaces)",
                has_value=False,
            )
        catalog = (
            None
            if self.catalog_class is None
            else resolved_class(self.catalog_class, "catalog_class")
        )
        return self.resolved_module_class()(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=False,
            learner_only=False,
            model_config=self.model_dict() or {},
            catalog_class=catalog,
        )

    def plain(self) -> dict[str, Any]:
        """The spec as a dict of its fields that differ from their defaults, classes as import
        paths (its JSON form; ``ImportPathError`` for a class no path reaches)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if f.name in ("module_class", "catalog_class") and isinstance(value, type):
                value = path_of(value)
            out[f.name] = value
        return out


def resolved_class(value: Any, name: str) -> type[Any]:
    """``value`` (a class or an import path) as a class; a ``ConfigError`` naming the spec's
    field ``name`` when it is neither."""
    if value is None:
        raise ConfigError.single(_WHERE, name, "names no class", has_value=False)
    if isinstance(value, type):
        return value
    try:
        found = resolve(value)
    except ImportPathError as exc:
        raise ConfigError.single(_WHERE, name, str(exc), value=value, has_value=True) from None
    if not isinstance(found, type):
        raise ConfigError.single(
            _WHERE,
            name,
            f"names a {type(found).__name__}, not a class",
            value=value,
            has_value=True,
        )
    return found


@dataclass(frozen=True)
class MultiRLModuleSpec:
    """A spec per module id, the ids being the policy ids of ``multi_agent(policies=...)``
    (one ``RLModuleSpec`` for them all is the same as ``rl_module_spec=that spec``)."""

    rl_module_specs: Mapping[str, RLModuleSpec] | RLModuleSpec = field(default_factory=dict)

    def __post_init__(self) -> None:
        specs = self.rl_module_specs
        if isinstance(specs, RLModuleSpec):
            return
        where = "MultiRLModuleSpec(...)"
        if not isinstance(specs, Mapping):
            raise ConfigError.single(
                where,
                "rl_module_specs",
                "is neither a dict of module id -> RLModuleSpec nor one RLModuleSpec",
                value=specs,
                has_value=True,
            )
        checked: dict[str, RLModuleSpec] = {}
        for module_id, spec in specs.items():
            if not isinstance(module_id, str):
                raise ConfigError.single(
                    where,
                    "rl_module_specs",
                    f"has the module id {module_id!r}, which is not a string (a policy id)",
                    value=module_id,
                    has_value=True,
                )
            checked[module_id] = to_single_spec(spec, f"rl_module_specs.{module_id}")
        object.__setattr__(self, "rl_module_specs", freeze(checked))

    def spec_for(self, module_id: str) -> RLModuleSpec | None:
        """The spec of module (policy) ``module_id``; None when it has none."""
        specs = self.rl_module_specs
        if isinstance(specs, RLModuleSpec):
            return specs
        return specs.get(module_id)

    def plain(self) -> dict[str, Any]:
        specs = self.rl_module_specs
        if isinstance(specs, RLModuleSpec):
            return {"rl_module_specs": specs.plain()}
        return {"rl_module_specs": {k: v.plain() for k, v in specs.items()}}


def to_single_spec(value: Any, label: str = "rl_module_spec") -> RLModuleSpec:
    """An ``RLModuleSpec``, or a dict of its fields (a file's form), as an ``RLModuleSpec``."""
    if isinstance(value, RLModuleSpec):
        return value
    names = {f.name for f in fields(RLModuleSpec)}
    if isinstance(value, Mapping) and set(value) <= names:
        return RLModuleSpec(**value)
    raise ConfigError.single(
        _WHERE,
        label,
        "is not an RLModuleSpec",
        value=value,
        has_value=True,
        allowed=f"an RLModuleSpec or a dict of its fields ({', '.join(sorted(names))})",
    )


def normalize_module_spec(value: Any) -> RLModuleSpec | MultiRLModuleSpec | None:
    """The ``rl_module_spec`` setting: a spec, a multi-module spec, their dict forms (a JSON or
    YAML config's), or None (the algorithm's own networks)."""
    if value is None or isinstance(value, RLModuleSpec | MultiRLModuleSpec):
        return value
    if isinstance(value, Mapping) and set(value) == {"rl_module_specs"}:
        specs = value["rl_module_specs"]
        if isinstance(specs, Mapping) and not set(specs) <= {f.name for f in fields(RLModuleSpec)}:
            return MultiRLModuleSpec({k: to_single_spec(v) for k, v in specs.items()})
        return MultiRLModuleSpec(to_single_spec(specs))
    if isinstance(value, Mapping):
        return to_single_spec(value)
    raise ValueError(
        f"expected an RLModuleSpec, a MultiRLModuleSpec or None, got a {type(value).__name__} "
        f"({short_repr(value)})"
    )


def module_spec_issues(
    spec: Any, policies: Mapping[str, Any], default_policy: str
) -> list[FieldIssue]:
    """A ``MultiRLModuleSpec`` whose module ids are not the policy ids (``policies``, or
    ``default_policy`` alone without any): both sets named."""
    if not isinstance(spec, MultiRLModuleSpec) or isinstance(spec.rl_module_specs, RLModuleSpec):
        return []
    module_ids = set(spec.rl_module_specs)
    policy_ids = set(policies) or {default_policy}
    if module_ids == policy_ids:
        return []
    return [
        FieldIssue(
            "rl_module_spec",
            f"has module ids {sorted(module_ids)} and the policies are {sorted(policy_ids)}: "
            "module ids are policy ids, and each policy needs its module's spec",
            has_value=False,
            allowed=f"a MultiRLModuleSpec with the module ids {sorted(policy_ids)}",
        )
    ]


if TYPE_CHECKING:
    RLModuleSpecValue: TypeAlias = RLModuleSpec | MultiRLModuleSpec | None
else:
    RLModuleSpecValue = Annotated[
        Any,
        BeforeValidator(normalize_module_spec),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "description": "an RLModuleSpec: module_class (an import path), "
                        "observation_space, action_space, model_config, catalog_class",
                    },
                    {
                        "type": "object",
                        "properties": {"rl_module_specs": {"type": "object"}},
                        "required": ["rl_module_specs"],
                        "description": "a MultiRLModuleSpec: module id -> RLModuleSpec",
                    },
                ]
            }
        ),
    ]
