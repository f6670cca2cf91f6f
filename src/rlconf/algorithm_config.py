"""``AlgorithmConfig``: the fluent, validated config every algorithm config builds on.

The class body holds the fluent methods, whose signatures IDEs and ``inspect.signature`` read;
reading, dict input, JSON, checks and copying come from the ``rlconf.config_*`` mixins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from typing_extensions import Unpack

from rlconf.config_base import ConfigBase
from rlconf.config_checks import DEFAULT_POLICY_ID as DEFAULT_POLICY_ID
from rlconf.config_checks import ConfigChecks
from rlconf.config_json import ConfigJson
from rlconf.config_lifecycle import ConfigLifecycle
from rlconf.config_lifecycle import _rebuild as _rebuild  # pickles made before the split use it
from rlconf.config_mapping import ConfigMapping
from rlconf.config_routing import ConfigRouting
from rlconf.errors import ConfigError, FieldIssue
from rlconf.fluent import NOT_SET, NotSet, fluent
from rlconf.inert_keys import INERT_KEYS
from rlconf.section import Section
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


class AlgorithmConfig(
    ConfigLifecycle, ConfigChecks, ConfigJson, ConfigRouting, ConfigMapping, ConfigBase
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
