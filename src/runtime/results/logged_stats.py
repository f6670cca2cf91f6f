"""``Stats``: the values logged under one key of a ``MetricsLogger`` and how they reduce, as
RLlib's new API stack documents it (``ray.rllib.utils.metrics.stats``):

- ``reduce="mean"``: over the last ``window`` values, or (no window) an exponential moving
  average, ``ema = (1 - ema_coeff) * ema + ema_coeff * value`` from the first value on
  (``ema_coeff`` 0.01 unless given);
- ``"sum"``, ``"min"``, ``"max"``: over the last ``window`` values, or over every value logged
  (kept as one running value);
- ``None``: the values themselves, as a list (the last ``window`` of them).

``clear_on_reduce=True`` empties the values once they are reduced into a result, so each
result reduces only what was logged since the one before; without it windows, moving averages
and running values carry on from result to result (a ``"sum"`` is then a lifetime sum).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The reductions ``log_value`` takes.
REDUCTIONS: tuple[str | None, ...] = ("mean", "min", "max", "sum", None)
#: RLlib's moving-average coefficient of a ``"mean"`` without a window.
DEFAULT_EMA_COEFF = 0.01

_ALLOWED_REDUCE = "'mean', 'min', 'max', 'sum' or None"


@dataclass(frozen=True)
class StatsSettings:
    """How one key's values reduce (fixed by the first value logged under it)."""

    reduce: str | None
    window: int | float | None
    ema_coeff: float | None
    clear_on_reduce: bool

    @staticmethod
    def of(
        label: str,
        reduce: str | None,
        window: int | float | None,
        ema_coeff: float | None,
        clear_on_reduce: bool,
    ) -> StatsSettings:
        """Checked settings (``label`` names the key in errors); a ``"mean"`` without a window
        or coefficient gets RLlib's ``ema_coeff`` of 0.01."""
        if reduce not in REDUCTIONS:
            raise ValueError(
                f"{label}: reduce={reduce!r} is not a reduction; allowed: {_ALLOWED_REDUCE}"
            )
        if window is not None:
            if isinstance(window, bool) or not isinstance(window, int | float) or window < 1:
                raise ValueError(
                    f"{label}: window={window!r} is not a window; allowed: an int >= 1, "
                    "float('inf') with clear_on_reduce=True, or None"
                )
            if math.isinf(window) and not clear_on_reduce:
                raise ValueError(
                    f"{label}: window=inf keeps every value for ever; allowed: it with "
                    "clear_on_reduce=True, or a finite window"
                )
            if not math.isinf(window) and window != int(window):
                raise ValueError(f"{label}: window={window!r} is not a whole number of values")
        if ema_coeff is not None:
            if window is not None:
                raise ValueError(
                    f"{label}: window={window!r} and ema_coeff={ema_coeff!r} are both given; "
                    "allowed: one of them (a mean over a window, or a moving average)"
                )
            if reduce != "mean":
                raise ValueError(
                    f"{label}: ema_coeff={ema_coeff!r} with reduce={reduce!r}; allowed: "
                    "ema_coeff only with reduce='mean'"
                )
            if not 0.0 < float(ema_coeff) <= 1.0:
                raise ValueError(f"{label}: ema_coeff={ema_coeff!r}; allowed: 0 < ema_coeff <= 1")
        if reduce == "mean" and window is None and ema_coeff is None:
            ema_coeff = DEFAULT_EMA_COEFF
        if window is not None and not math.isinf(window):
            window = int(window)
        return StatsSettings(reduce, window, ema_coeff, bool(clear_on_reduce))

    @property
    def running(self) -> bool:
        """Kept as one running value: a moving average, or a sum, min or max of every value."""
        return self.ema_coeff is not None or (
            self.reduce in ("sum", "min", "max") and self.window is None
        )

    def describe(self) -> str:
        return (
            f"reduce={self.reduce!r}, window={self.window!r}, ema_coeff={self.ema_coeff!r}, "
            f"clear_on_reduce={self.clear_on_reduce!r}"
        )

    def conflict(
        self,
        reduce: str | None,
        window: int | float | None,
        ema_coeff: float | None,
        clear_on_reduce: bool,
    ) -> str | None:
        """What a later ``log_value`` of the key asks that differs from these settings (a
        parameter left at its default asks nothing); None when nothing does."""
        asked = []
        if reduce != "mean" and reduce != self.reduce:
            asked.append(f"reduce={reduce!r}")
        if window is not None and window != self.window:
            asked.append(f"window={window!r}")
        if ema_coeff is not None and ema_coeff != self.ema_coeff:
            asked.append(f"ema_coeff={ema_coeff!r}")
        if clear_on_reduce and not self.clear_on_reduce:
            asked.append("clear_on_reduce=True")
        return ", ".join(asked) or None


class Stats:
    """The values of one key under its ``StatsSettings``."""

    __slots__ = ("settings", "values")

    def __init__(self, settings: StatsSettings) -> None:
        self.settings = settings
        self.values: list[Any] | deque[Any] = self._empty()

    def _empty(self) -> list[Any] | deque[Any]:
        window = self.settings.window
        if window is not None and not math.isinf(window):
            return deque(maxlen=int(window))
        return []

    def push(self, value: Any) -> None:
        settings, values = self.settings, self.values
        if not settings.running or not values:
            values.append(value)
        elif settings.ema_coeff is not None:
            values[0] = (1.0 - settings.ema_coeff) * values[0] + settings.ema_coeff * value
        elif settings.reduce == "sum":
            values[0] = values[0] + value
        elif settings.reduce == "min":
            values[0] = min(values[0], value)
        else:
            values[0] = max(values[0], value)

    def push_all(self, values: Sequence[Any]) -> None:
        for value in values:
            self.push(value)

    def peek(self) -> Any:
        """The reduced value, the values left as they are."""
        reduce, values = self.settings.reduce, self.values
        if reduce is None:
            return list(values)
        if not values:
            return 0 if reduce == "sum" else float("nan")
        if reduce == "sum":
            return sum(values)
        if reduce == "min":
            return min(values)
        if reduce == "max":
            return max(values)
        return float(sum(values)) / len(values)

    def reduce(self) -> Any:
        """The reduced value for a result; with ``clear_on_reduce`` the values are emptied."""
        out = self.peek()
        if self.settings.clear_on_reduce:
            self.values = self._empty()
        return out

    def clear(self) -> None:
        self.values = self._empty()


def as_number(label: str, value: Any) -> int | float:
    """``value`` as a Python number (a numpy or torch scalar's ``item()``); a ``TypeError``
    naming ``label`` when it is no number."""
    if getattr(value, "ndim", 0) == 0 and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    raise TypeError(
        f"{label}: the value {value!r:.80} ({type(value).__name__}) is not a number; allowed: "
        "an int or float (or a numpy/torch scalar) for reduce='mean'/'min'/'max'/'sum', any "
        "value with reduce=None"
    )
