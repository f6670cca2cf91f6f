"""Observation filters: ``NoFilter`` and ``MeanStdFilter`` (running mean/std normalisation).

A worker's filter keeps a buffer of what it saw since the last sync; the driver merges all
buffers into its own filter and sends the merged state back (``synchronize_filters``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


class RunningStat:
    """Count, mean and sum of squared deviations, mergeable (Chan et al.)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.n = 0
        self.mean: Array = np.zeros(shape)
        self.m2: Array = np.zeros(shape)

    def push_many(self, rows: npt.NDArray[Any]) -> None:
        if len(rows) == 0:
            return
        other = RunningStat(self.shape)
        other.n = len(rows)
        other.mean = rows.mean(axis=0)
        other.m2 = ((rows - other.mean) ** 2).sum(axis=0)
        self.update(other)

    def update(self, other: RunningStat) -> None:
        if other.n == 0:
            return
        total = self.n + other.n
        delta = other.mean - self.mean
        self.mean = self.mean + delta * (other.n / total)
        self.m2 = self.m2 + other.m2 + delta**2 * (self.n * other.n / total)
        self.n = total

    @property
    def std(self) -> Array:
        if self.n < 2:
            return np.ones(self.shape)
        return np.sqrt(self.m2 / (self.n - 1))

    def copy(self) -> RunningStat:
        out = RunningStat(self.shape)
        out.n, out.mean, out.m2 = self.n, self.mean.copy(), self.m2.copy()
        return out

    def to_state(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean.tolist(), "m2": self.m2.tolist()}

    @classmethod
    def from_state(cls, shape: tuple[int, ...], state: dict[str, Any]) -> RunningStat:
        out = cls(shape)
        out.n = int(state["n"])
        out.mean = np.asarray(state["mean"], dtype=np.float64).reshape(shape)
        out.m2 = np.asarray(state["m2"], dtype=np.float64).reshape(shape)
        return out


class NoFilter:
    """Passes observations through unchanged."""

    name = "NoFilter"

    def __call__(self, rows: npt.NDArray[Any], update: bool = True) -> Any:
        return rows

    def get_state(self) -> dict[str, Any]:
        return {"name": self.name}

    def set_state(self, state: dict[str, Any]) -> None:
        pass

    def pop_buffer(self) -> dict[str, Any]:
        return {"name": self.name}

    def apply_buffer(self, buffer: dict[str, Any]) -> None:
        pass


class MeanStdFilter:
    """Normalises each observation component by the running mean and std, clipped to ±clip:
    float32 values, of uint8 images too (``filtered_space``)."""

    name = "MeanStdFilter"

    def __init__(self, shape: tuple[int, ...], clip: float = 10.0) -> None:
        self.shape = shape
        self.clip = clip
        self.stats = RunningStat(shape)
        self.buffer = RunningStat(shape)

    def __call__(self, rows: npt.NDArray[Any], update: bool = True) -> Any:
        if update:
            self.stats.push_many(rows)
            self.buffer.push_many(rows)
        out = (rows - self.stats.mean) / (self.stats.std + 1e-8)
        return np.clip(out, -self.clip, self.clip).astype(np.float32)

    def get_state(self) -> dict[str, Any]:
        return {"name": self.name, "stats": self.stats.to_state(), "clip": self.clip}

    def set_state(self, state: dict[str, Any]) -> None:
        self.stats = RunningStat.from_state(self.shape, state["stats"])
        self.clip = float(state.get("clip", self.clip))

    def pop_buffer(self) -> dict[str, Any]:
        """What this filter saw since the last call (for the driver to merge)."""
        buffer, self.buffer = self.buffer, RunningStat(self.shape)
        return {"name": self.name, "stats": buffer.to_state()}

    def apply_buffer(self, buffer: dict[str, Any]) -> None:
        self.stats.update(RunningStat.from_state(self.shape, buffer["stats"]))


ObservationFilter = NoFilter | MeanStdFilter


def filtered_space(space: gym.spaces.Box, obs_filter: ObservationFilter) -> gym.spaces.Box:
    """The space of what ``obs_filter`` makes of observations of ``space`` (a preprocessor's):
    ``NoFilter`` keeps it (uint8 images stay uint8), ``MeanStdFilter`` makes float32."""
    if isinstance(obs_filter, NoFilter) or space.dtype == np.float32:
        return space
    return gym.spaces.Box(-np.inf, np.inf, space.shape, np.float32)


def get_filter(name: str, shape: tuple[int, ...]) -> ObservationFilter:
    if name == "MeanStdFilter":
        return MeanStdFilter(shape)
    if name == "NoFilter":
        return NoFilter()
    raise ValueError(
        f"observation_filter {name!r} is not supported; allowed: 'NoFilter', 'MeanStdFilter'"
    )
