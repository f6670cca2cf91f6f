"""Other names of rlconf's config keys: the one table of them, and how given keys are resolved.

RLlib 2.x renamed a few settings that rlconf keeps under the reference's names
(``min_sample_timesteps_per_iteration`` is rlconf's ``min_sample_timesteps_per_reporting``), its
new API stack renamed more (``num_env_runners``, ``num_epochs``: ``rlconf.new_stack_names``), and
the reference still takes a few deprecated names (``metrics_smoothing_episodes``, ``monitor``).
Such a name is the same setting as the key it names, with one value: every input path (the
fluent methods' keywords, ``from_dict``, ``update_from_dict``, item and attribute assignment,
``overrides`` and nested overrides, YAML files) sets that key, and reading by either name gives
its value. ``to_dict()`` and JSON give it back under rlconf's key only. The fluent methods'
signatures (what editors complete and type checkers check) list rlconf's key, and besides it the
names their section declares (``Section.aliases``: ``training(num_epochs=...)``) or lists
(``Section.keywords``: ``env_runners(num_env_runners=...)``). A deprecated
name is accepted with a ``DeprecationWarning`` naming the key to use. Giving both names of one
setting with different values is an error naming both.

A few of those names are keys of a dict-valued setting (``NESTED_KEY_ALIASES``): RLlib 2.x's
``replay_buffer_config: {learning_starts: 256}`` is rlconf's
``num_steps_sampled_before_learning_starts: 256``. Such a key is taken out of the dict as it is
given and sets the top-level key, as a top-level alias does (given beside that key with another
value in one call or dict: the same error naming both).
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlconf.callback_hooks import CALLBACK_HOOKS
from rlconf.errors import FieldIssue, short_repr
from rlconf.new_stack_names import NEW_STACK_CONVERTED, NEW_STACK_NAMES


@dataclass(frozen=True)
class KeyAlias:
    """Another name of config key ``key``; ``deprecated`` names warn when they are used."""

    key: str
    deprecated: bool = False
    #: A name of RLlib's new API stack (``rlconf.new_stack_names``) rather than of RLlib 2.x.
    new_stack: bool = False
    #: Turns a value given by this name into the key's (``ValueError`` with the reason when it
    #: has none): ``env_to_module_connector``'s factory of a ``MeanStdFilter`` is
    #: ``observation_filter="MeanStdFilter"``. None: the value is the key's as given.
    convert: Callable[[Any], Any] | None = None

    def describe(self) -> str:
        if self.deprecated:
            return f"the deprecated name of {self.key}"
        if self.new_stack:
            return f"RLlib's new API stack name of {self.key}"
        return f"the RLlib 2.x name of {self.key}"


#: Other name -> the config key it sets.
KEY_ALIASES: dict[str, KeyAlias] = {
    "min_sample_timesteps_per_iteration": KeyAlias("min_sample_timesteps_per_reporting"),
    "min_train_timesteps_per_iteration": KeyAlias("min_train_timesteps_per_reporting"),
    "min_time_s_per_iteration": KeyAlias("min_time_s_per_reporting"),
    "custom_evaluation_function": KeyAlias("custom_eval_function"),
    "num_rollout_workers": KeyAlias("num_workers"),
    "optimization_config": KeyAlias("optimization"),
    "metrics_smoothing_episodes": KeyAlias("metrics_num_episodes_for_smoothing", deprecated=True),
    "monitor": KeyAlias("record_env", deprecated=True),
    "callbacks_class": KeyAlias("callbacks"),
    **{name: KeyAlias(key, new_stack=True) for name, key in NEW_STACK_NAMES.items()},
    **{
        name: KeyAlias(key, new_stack=True, convert=convert)
        for name, (key, convert) in NEW_STACK_CONVERTED.items()
    },
    # RLlib's AlgorithmConfig keeps the functions of callbacks(on_<hook>=...) as
    # callbacks_on_<hook>.
    **{f"callbacks_{hook}": KeyAlias(hook, new_stack=True) for hook in CALLBACK_HOOKS},
}

#: (dict-valued config key, key inside it) -> the top-level config key it sets.
NESTED_KEY_ALIASES: dict[tuple[str, str], KeyAlias] = {
    # RLlib 2.0-2.2 read the warm-up from the replay buffer's config; 2.x's tuned files
    # (sac/pendulum-sac.yaml, dqn/pong-rainbow.yaml) still give it there.
    ("replay_buffer_config", "learning_starts"): KeyAlias(
        "num_steps_sampled_before_learning_starts"
    ),
}

#: Every alias by the name it is given as (a nested one as ``"field.key"``).
_ALL_ALIASES: dict[str, KeyAlias] = {
    **KEY_ALIASES,
    **{f"{field}.{key}": alias for (field, key), alias in NESTED_KEY_ALIASES.items()},
}
_NESTING_FIELDS = frozenset(field for field, _ in NESTED_KEY_ALIASES)

_PACKAGE = str(Path(__file__).parent) + os.sep


def canonical_key(name: str) -> str:
    """The config key ``name`` stands for (``name`` itself when it is no alias)."""
    alias = KEY_ALIASES.get(name)
    return name if alias is None else alias.key


def _outside_caller() -> int:
    """The ``stacklevel`` of the first caller outside this package (the user's code), or of the
    program's main module (``rlconf train``): where the warning is shown as coming from."""
    level = 1
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the function calling warn()
    while (
        frame is not None
        and frame.f_code.co_filename.startswith(_PACKAGE)
        and frame.f_globals.get("__name__") != "__main__"
    ):
        frame = frame.f_back
        level += 1
    return level


def _values_differ(a: Any, b: Any) -> bool:
    try:
        return not bool(a == b)
    except Exception:  # array-valued spaces and the like compare elementwise
        return a is not b


@dataclass
class Resolved:
    """Given keys with every alias replaced by its key (in the order given), the aliases that
    were used (``{key: name given}``, for naming the user's spelling in errors), and the
    conflicts."""

    #: By config key (a key that is not a string stays, for the caller to report).
    values: dict[Any, Any]
    given_as: dict[str, str]
    issues: list[FieldIssue]

    def relabel(self, issues: list[FieldIssue], prefix: str) -> list[FieldIssue]:
        """``issues`` naming each setting as it was given (``min_sample_timesteps_per_iteration``
        rather than the key it sets)."""
        if not self.given_as:
            return issues
        out = []
        for issue in issues:
            for key, name in self.given_as.items():
                label = prefix + key
                if issue.field == label or issue.field.startswith(label + "."):
                    issue = replace(issue, field=prefix + name + issue.field[len(label) :])
                    break
            out.append(issue)
        return out


def _nested_aliases_lifted(given: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """``given``'s items with each nested alias taken out of its dict and given after it as
    ``("field.key", value)``; the dict itself is copied, never changed."""
    items: list[tuple[Any, Any]] = []
    for name, value in given.items():
        if name not in _NESTING_FIELDS or not isinstance(value, Mapping):
            items.append((name, value))
            continue
        lifted = [k for k in value if (name, k) in NESTED_KEY_ALIASES]
        if not lifted:
            items.append((name, value))
            continue
        items.append((name, {k: v for k, v in value.items() if k not in lifted}))
        items.extend((f"{name}.{k}", value[k]) for k in lifted)
    return items


def _has_aliases(given: Mapping[Any, Any]) -> bool:
    for name, value in given.items():
        if not isinstance(name, str):
            continue
        if name in KEY_ALIASES:
            return True
        if (
            name in _NESTING_FIELDS
            and isinstance(value, Mapping)
            and any((name, k) in NESTED_KEY_ALIASES for k in value)
        ):
            return True
    return False


def resolve_aliases(given: Mapping[str, Any], prefix: str) -> Resolved:
    """``given`` (by config key or Python name) with its aliases resolved (the nested ones
    taken out of their dicts); a deprecated name warns (``DeprecationWarning``), and an alias
    given beside its key (or beside another alias of it) with another value is an issue naming
    both."""
    if not _has_aliases(given):
        return Resolved(dict(given), {}, [])
    values: dict[Any, Any] = {}
    given_as: dict[str, str] = {}
    issues: list[FieldIssue] = []
    names: dict[str, str] = {}  # key -> the first name it was given by
    for name, value in _nested_aliases_lifted(given):
        alias = _ALL_ALIASES.get(name) if isinstance(name, str) else None
        key = name if alias is None else alias.key
        if alias is not None and alias.convert is not None:
            try:
                value = alias.convert(value)
            except ValueError as exc:
                issues.append(FieldIssue(prefix + name, str(exc), value))
                continue
        if alias is not None and alias.deprecated:
            warnings.warn(
                f"config key {name!r} is deprecated: use {alias.key!r} (it sets that)",
                DeprecationWarning,
                stacklevel=_outside_caller(),
            )
        if key in values:
            first = names[key]
            if _values_differ(values[key], value):
                named = name if alias is not None else first
                other = first if named == name else name
                issues.append(
                    FieldIssue(
                        prefix + named,
                        f"is {_ALL_ALIASES[named].describe()}, and both are given, with "
                        f"different values ({prefix}{first}={short_repr(values[key])}, "
                        f"{prefix}{name}={short_repr(value)})",
                        has_value=False,
                        allowed=f"one of {named} and {other}, or the same value for both",
                    )
                )
            continue
        values[key] = value
        names[key] = name
        if alias is not None:
            given_as[key] = name
    return Resolved(values, given_as, issues)
