"""``AlgorithmConfig``: the fluent, validated config every algorithm config builds on.

The fluent methods come from ``AlgorithmConfigFluent``, generated from the sections by
``rlconf.fluent_codegen`` into ``rlconf.generated.algorithm_config_fluent`` (every field a typed
keyword with its default and one-line doc, for editors, mypy and ``inspect.signature``);
reading, dict input, JSON, checks and copying come from the ``rlconf.config_*`` mixins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from rlconf.config_base import ConfigBase
from rlconf.config_checks import DEFAULT_POLICY_ID as DEFAULT_POLICY_ID
from rlconf.config_checks import ConfigChecks
from rlconf.config_json import ConfigJson
from rlconf.config_lifecycle import ConfigLifecycle
from rlconf.config_lifecycle import _rebuild as _rebuild  # pickles made before the split use it
from rlconf.config_mapping import ConfigMapping
from rlconf.config_routing import ConfigRouting
from rlconf.errors import ConfigError, FieldIssue
from rlconf.fluent import NOT_SET
from rlconf.generated.algorithm_config_fluent import AlgorithmConfigFluent
from rlconf.inert_keys import INERT_KEYS
from rlconf.key_aliases import resolve_aliases
from rlconf.method_parameters import routed_keys
from rlconf.new_stack_names import per_learner_issues
from rlconf.section import Section, key_of
from rlconf.sections.api_stack import API_STACK
from rlconf.sections.callbacks import CALLBACKS
from rlconf.sections.checkpointing import CHECKPOINTING
from rlconf.sections.debugging import DEBUGGING
from rlconf.sections.env_runners import ENV_RUNNERS
from rlconf.sections.environment import ENVIRONMENT
from rlconf.sections.evaluation import EVALUATION
from rlconf.sections.exploration import EXPLORATION
from rlconf.sections.fault_tolerance import FAULT_TOLERANCE
from rlconf.sections.framework import FRAMEWORK
from rlconf.sections.learners import LEARNERS
from rlconf.sections.multi_agent import MULTI_AGENT
from rlconf.sections.offline_data import OFFLINE_DATA
from rlconf.sections.python_environment import PYTHON_ENVIRONMENT
from rlconf.sections.reporting import REPORTING
from rlconf.sections.resources import RESOURCES
from rlconf.sections.rl_module import RL_MODULE
from rlconf.sections.rollouts import ROLLOUTS
from rlconf.sections.training import TRAINING


class AlgorithmConfig(
    AlgorithmConfigFluent,
    ConfigLifecycle,
    ConfigChecks,
    ConfigJson,
    ConfigRouting,
    ConfigMapping,
    ConfigBase,
):
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
            # RLlib's new API stack: keywords of the sections above under its names
            API_STACK,
            ENV_RUNNERS,
            LEARNERS,
            RL_MODULE,
            CHECKPOINTING,
        )
    }
    #: Defaults of this algorithm that differ from the sections' (by config key).
    _algo_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._info().defaults))
        object.__setattr__(self, "_inert", {})
        object.__setattr__(self, "_frozen", False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in AlgorithmConfig.__slots__:
            object.__setattr__(self, name, value)
            return
        self._assign(name, value, f"{type(self).__name__}.{name} = ...")

    # ------------------------------------------------------------------------- setting

    def _set(self, method: str, given: Mapping[str, Any]) -> Self:
        """Validate and store the arguments of one fluent call: ``given`` is its ``locals()``
        (the config itself and the parameters left ``NOT_SET`` are dropped) or its ``**kwargs``
        (where a keyword named ``self`` is an unknown key like any other)."""
        where = f"{type(self).__name__}.{method}()"
        kwargs = {
            k: v for k, v in given.items() if v is not NOT_SET and not (k == "self" and v is self)
        }
        self._check_unfrozen(where)
        section = self._sections[method]
        validated, issues = self._validate_for_section(section, kwargs, where, "")
        if issues:
            raise ConfigError(where, issues)
        self._store(validated)
        return self

    def _validate_for_section(
        self,
        section: Section,
        given: Mapping[str, Any],
        where: str,
        prefix: str,
    ) -> tuple[dict[str, Any], list[FieldIssue]]:
        """Validate keyword arguments of one fluent method; results by config key. A keyword
        that sets a key of another section (``env_runners(explore=...)``: ``Section.keywords``)
        is validated by that section."""
        known: dict[str, Any] = {}
        elsewhere: dict[str, dict[str, Any]] = {}
        inert: dict[str, Any] = {}
        resolved = resolve_aliases(given, prefix)
        issues: list[FieldIssue] = list(resolved.issues)
        issues += per_learner_issues(resolved.given_as, resolved.values, self._values, prefix)
        names = set(section.names)
        routed = routed_keys(type(self), section.method)
        for pyname, value in resolved.values.items():
            route = routed.get(key_of(pyname)) if isinstance(pyname, str) else None
            if pyname in names:
                known[pyname] = value
            elif route is not None and route.section is not None:
                elsewhere.setdefault(route.section.method, {})[route.field] = value
            elif pyname in INERT_KEYS and (
                INERT_KEYS[pyname].method == section.method or route is not None
            ):
                inert.update(self._check_inert(pyname, value, prefix, issues))
            else:
                issues.append(self._unknown_key_issue(prefix + pyname, pyname, section))
        validated, issues = self._finish(section, known, issues, prefix, self._values)
        for method, values in elsewhere.items():
            owner = self._sections[method]
            more, issues = self._finish(owner, values, issues, prefix, self._values)
            validated.update(more)
        validated.update(inert)
        return validated, resolved.relabel(issues, prefix)
