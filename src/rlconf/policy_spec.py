"""``PolicySpec`` and the ``policies`` field of a multi-agent config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BeforeValidator, WithJsonSchema

from rlconf.field_types import _must_be_class
from rlconf.frozen import freeze
from rlconf.spaces import is_space


@dataclass(frozen=True)
class PolicySpec:
    """How to build one policy; every ``None`` is filled in from the algorithm and the env.

    ``config`` holds overrides of the algorithm's config for this policy (validated like
    ``AlgorithmConfig.overrides``).
    """

    policy_class: type[Any] | None = None
    observation_space: Any = None
    action_space: Any = None
    config: Mapping[str, Any] | None = None


def _to_spec(policy_id: str, value: Any) -> PolicySpec:
    if value is None:
        return PolicySpec()
    if isinstance(value, PolicySpec):
        spec = value
    elif isinstance(value, list | tuple) and len(value) == 4:
        spec = PolicySpec(*value)
    elif isinstance(value, Mapping) and set(value) <= set(PolicySpec.__dataclass_fields__):
        spec = PolicySpec(**value)
    else:
        raise ValueError(
            f"policy {policy_id!r}: expected a PolicySpec, None or a "
            f"(policy_class, observation_space, action_space, config) tuple, got {value!r}"
        )
    policy_class = spec.policy_class
    if policy_class is not None:
        policy_class = _must_be_class(policy_class)
    for name in ("observation_space", "action_space"):
        space = getattr(spec, name)
        if space is not None and not is_space(space):
            raise ValueError(f"policy {policy_id!r}: {name} must be a gymnasium space or None")
    if spec.config is not None and not isinstance(spec.config, Mapping):
        raise ValueError(f"policy {policy_id!r}: config must be a dict of overrides or None")
    return PolicySpec(
        policy_class,
        spec.observation_space,
        spec.action_space,
        None if spec.config is None else freeze(dict(spec.config)),
    )


def normalize_policies(value: Any) -> dict[str, PolicySpec]:
    """Turn a set or list of ids, or a dict of id -> spec, into a dict of id -> PolicySpec."""
    if isinstance(value, set | frozenset | list | tuple):
        ids = list(value)
        bad = [i for i in ids if not isinstance(i, str)]
        if bad:
            raise ValueError(f"policy ids must be strings, got {bad!r}")
        if len(set(ids)) != len(ids):
            raise ValueError("policy ids must be unique")
        return {policy_id: PolicySpec() for policy_id in sorted(ids)}
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise ValueError(f"policy ids must be strings, got {bad!r}")
        return {policy_id: _to_spec(policy_id, spec) for policy_id, spec in value.items()}
    raise ValueError(
        f"expected a set or list of policy ids or a dict of id -> PolicySpec, got "
        f"{type(value).__name__}"
    )


if TYPE_CHECKING:
    Policies: TypeAlias = (
        set[str] | list[str] | Mapping[str, PolicySpec | tuple[Any, Any, Any, Any] | None]
    )
else:
    Policies = Annotated[
        dict[str, Any],
        BeforeValidator(normalize_policies),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                    {
                        "type": "object",
                        "additionalProperties": {
                            "anyOf": [
                                {"type": "null"},
                                {
                                    "type": "object",
                                    "properties": {
                                        "policy_class": {},
                                        "observation_space": {},
                                        "action_space": {},
                                        "config": {},
                                    },
                                    "additionalProperties": False,
                                },
                            ]
                        },
                    },
                ]
            }
        ),
    ]
