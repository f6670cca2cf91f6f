"""``ReplayBuffer``: a uniform replay buffer of fixed capacity over numpy columns.

Storage is one preallocated array per column (made on the first ``add``, from that batch's
dtypes and shapes), written as a ring: no Python object per transition. Columns of Python
objects (``infos``) are not stored.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from runtime.core.sample_batch import SampleBatch

Array = npt.NDArray[Any]


class ReplayBuffer:
    def __init__(self, capacity: int, seed: int | None = None) -> None:
        if int(capacity) < 1:
            raise ValueError(f"ReplayBuffer: capacity must be >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self._columns: dict[str, Array] = {}
        self._next = 0
        self._size = 0
        self.num_added = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    def add(self, batch: SampleBatch) -> None:
        """Store every row of ``batch``; the oldest rows go once the buffer is full."""
        rows = len(batch)
        if rows == 0:
            return
        numeric = {k: v for k, v in batch.items() if v.dtype != object}
        if not self._columns:
            self._columns = {
                k: np.empty((self.capacity, *v.shape[1:]), dtype=v.dtype)
                for k, v in numeric.items()
            }
        elif set(numeric) != set(self._columns):
            raise ValueError(
                f"ReplayBuffer.add: columns {sorted(numeric)} differ from the stored "
                f"{sorted(self._columns)}"
            )
        if rows > self.capacity:
            numeric = {k: v[-self.capacity :] for k, v in numeric.items()}
            rows = self.capacity
        slots = (self._next + np.arange(rows)) % self.capacity
        for name, values in numeric.items():
            self._columns[name][slots] = values
        self._next = int((self._next + rows) % self.capacity)
        self._size = min(self.capacity, self._size + rows)
        self.num_added += len(batch)

    def sample(self, num_items: int) -> SampleBatch:
        """``num_items`` rows drawn uniformly with replacement."""
        if self._size == 0:
            raise ValueError("ReplayBuffer.sample: the buffer is empty")
        index = self._rng.integers(0, self._size, size=int(num_items))
        return SampleBatch({k: v[index] for k, v in self._columns.items()})

    def get_state(self) -> tuple[dict[str, Any], dict[str, Array]]:
        """JSON-able bookkeeping and the stored rows as arrays (oldest first)."""
        order = (self._next - self._size + np.arange(self._size)) % self.capacity
        arrays = {k: v[order] for k, v in self._columns.items()}
        meta = {"num_added": self.num_added, "rng": self._rng.bit_generator.state}
        return meta, arrays

    def set_state(self, meta: dict[str, Any], arrays: dict[str, Array]) -> None:
        self._columns = {}
        self._next = self._size = 0
        if arrays:
            self.add(SampleBatch(arrays))
        self.num_added = int(meta.get("num_added", self._size))
        if "rng" in meta:
            self._rng.bit_generator.state = dict(meta["rng"])
