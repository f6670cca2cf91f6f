"""``MetricsLogger``: RLlib's new API stack way for callbacks to put values into results
(``metrics_logger.log_value(key, value, reduce=...)``, ``ray.rllib.utils.metrics``).

Where a value lands depends on whose logger it is: a rollout worker's (``env_runner.metrics``,
handed to the episode, sample and environment hooks) lands in ``result["env_runners"]`` (an
evaluation worker's in ``result["evaluation"]["env_runners"]``); the algorithm's
(``algorithm.metrics``, handed to ``on_algorithm_init``, ``on_train_result``,
``on_evaluate_start``/``_end``, ``on_checkpoint_loaded``, ``on_env_runners_recreated``) at the
result's top level. Keys are a string or a tuple of strings for nested keys (``("a", "b")``
is ``result[...]["a"]["b"]``).

A worker's logger keeps what was logged since it last sent it (``take_logged``); the values
travel to the driver with each sample (and evaluation) and are merged there, worker by worker,
into one logger per destination (``merge_logged``), which reduces them into each result
(``reduce``) as ``logged_stats.Stats`` describes: a window or moving average then spans the
values of every worker. ``peek`` on a worker reads that worker's own values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from runtime.results.logged_stats import Stats, StatsSettings, as_number

#: A key: a name, or a tuple of names for a nested key.
Key = str | tuple[str, ...]


@dataclass
class LoggedKey:
    """What a worker sends of one key: its settings and the values logged since the last
    send (a running sum, min or max as one value)."""

    key: tuple[str, ...]
    settings: StatsSettings
    values: list[Any]


class MetricsLogger:
    """Logs values under keys and reduces them into results; see the module doc.

    ``upstream``: a worker's logger, whose values are also kept until ``take_logged()`` sends
    them to the driver."""

    def __init__(self, *, upstream: bool = False) -> None:
        self._stats: dict[tuple[str, ...], Stats] = {}
        self._upstream = upstream
        #: What is to be sent per key: kept as the key's own reduction keeps values (a running
        #: sum, min or max as one value, a window's last values), so that a worker whose values
        #: are not taken for a while holds no more than that; a moving average's in full.
        self._unsent: dict[tuple[str, ...], Stats] = {}

    # ------------------------------------------------------------------ logging

    def log_value(
        self,
        key: Key,
        value: Any,
        reduce: str | None = "mean",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        clear_on_reduce: bool = False,
    ) -> None:
        """Log ``value`` under ``key``. The settings (``reduce``: ``"mean"``, ``"min"``,
        ``"max"``, ``"sum"`` or None for the list of values; ``window``: reduce the last that
        many values; ``ema_coeff``: a moving average's coefficient, for ``"mean"`` without a
        window, 0.01 by default; ``clear_on_reduce``: start afresh after each result) are the
        first call's for a key; a later call that asks for others is an error."""
        path = _path(key)
        stats = self._stats.get(path)
        if stats is None:
            settings = StatsSettings.of(_label(path), reduce, window, ema_coeff, clear_on_reduce)
        else:
            settings = stats.settings
            asked = settings.conflict(reduce, window, ema_coeff, clear_on_reduce)
            if asked is not None:
                raise ValueError(
                    f"{_label(path)}: {asked} for a key logged with {settings.describe()}; "
                    "allowed: the key's own settings (they are the first log_value's), or "
                    "another key"
                )
        if settings.reduce is not None:
            value = as_number(_label(path), value)
        if stats is None:
            self._check_nesting(path)
            stats = self._stats[path] = Stats(settings)
        stats.push(value)
        if self._upstream:
            unsent = self._unsent.get(path)
            if unsent is None:
                unsent = self._unsent[path] = Stats(_unsent_settings(stats.settings))
            unsent.push(value)

    def log_dict(
        self,
        stats_dict: Mapping[str, Any],
        *,
        key: Key | None = None,
        reduce: str | None = "mean",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        clear_on_reduce: bool = False,
    ) -> None:
        """``log_value`` of each leaf of the (nested) ``stats_dict``, under ``key`` when
        given: ``{"a": {"b": 1}}`` logs ``("a", "b")``."""
        prefix = () if key is None else _path(key)
        for path, value in _leaves(stats_dict, prefix):
            self.log_value(path, value, reduce, window, ema_coeff, clear_on_reduce)

    def _check_nesting(self, path: tuple[str, ...]) -> None:
        for other in self._stats:
            shorter, longer = sorted((path, other), key=len)
            if longer[: len(shorter)] == shorter:
                raise ValueError(
                    f"{_label(path)}: {_label(other)} is logged already, and a key can't be "
                    "both a value and a dict of values; allowed: keys that don't nest in one "
                    "another"
                )

    # ------------------------------------------------------------------ reading

    def peek(self, key: Key, default: Any = None) -> Any:
        """The reduced value of ``key`` now (a dict for a key with nested keys under it),
        without reducing it; ``default`` when nothing was logged under it (a ``KeyError`` when
        that is None too)."""
        path = _path(key)
        stats = self._stats.get(path)
        if stats is not None:
            return stats.peek()
        nested = {p[len(path) :]: s for p, s in self._stats.items() if p[: len(path)] == path}
        if nested:
            return _nest({p: s.peek() for p, s in nested.items()})
        if default is not None:
            return default
        logged = ", ".join(_label(p) for p in self._stats) or "nothing yet"
        raise KeyError(
            f"metrics_logger.peek({key!r}): nothing was logged under it (logged: {logged})"
        )

    def reduce(self) -> dict[str, Any]:
        """Every key's reduced value, as nested dicts (what lands in a result)."""
        return _nest({path: stats.reduce() for path, stats in self._stats.items()})

    # ------------------------------------------------------------------ travel

    def take_logged(self) -> list[LoggedKey]:
        """What was logged since the last call (a worker's values for the driver). A key with
        ``clear_on_reduce`` starts afresh on the worker too, as its driver-side values do with
        each result."""
        out = []
        for path, unsent in self._unsent.items():
            settings = self._stats[path].settings
            out.append(LoggedKey(path, settings, list(unsent.values)))
            if settings.clear_on_reduce:
                self._stats[path].clear()
        self._unsent = {}
        return out

    def merge_logged(self, batches: Iterable[list[LoggedKey]]) -> None:
        """Add what workers sent (each worker's ``take_logged()``), worker by worker."""
        for batch in batches:
            for logged in batch:
                stats = self._stats.get(logged.key)
                if stats is None:
                    self._check_nesting(logged.key)
                    stats = self._stats[logged.key] = Stats(logged.settings)
                elif stats.settings != logged.settings:
                    raise ValueError(
                        f"{_label(logged.key)}: logged with {logged.settings.describe()} on one "
                        f"rollout worker and with {stats.settings.describe()} on another; "
                        "allowed: the same settings on every worker"
                    )
                stats.push_all(logged.values)


def _unsent_settings(settings: StatsSettings) -> StatsSettings:
    """How a worker keeps a key's values until they are sent: as the key's reduction keeps
    them, but a moving average's as they came (the driver averages them in order)."""
    if settings.ema_coeff is None:
        return settings
    return replace(settings, reduce=None, ema_coeff=None)


def merge_into(target: dict[str, Any], logged: Mapping[str, Any]) -> None:
    """Put the reduced values ``logged`` into the result dict ``target``: nested dicts merged
    key by key, a logged value in place of the result's own under the same key."""
    for name, value in logged.items():
        inner = target.get(name)
        if isinstance(value, Mapping) and isinstance(inner, dict):
            merge_into(inner, value)
        else:
            target[name] = value


def _path(key: Key) -> tuple[str, ...]:
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple) and key and all(isinstance(part, str) for part in key):
        return key
    raise TypeError(
        f"metrics key {key!r} is not a key; allowed: a string, or a non-empty tuple of strings "
        "for a nested key"
    )


def _label(path: tuple[str, ...]) -> str:
    return f"metrics key {path[0]!r}" if len(path) == 1 else f"metrics key {path!r}"


def _leaves(
    tree: Mapping[str, Any], prefix: tuple[str, ...]
) -> Iterable[tuple[tuple[str, ...], Any]]:
    for name, value in tree.items():
        path = (*prefix, str(name))
        if isinstance(value, Mapping):
            yield from _leaves(value, path)
        else:
            yield path, value


def _nest(flat: Mapping[tuple[str, ...], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, value in flat.items():
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out
