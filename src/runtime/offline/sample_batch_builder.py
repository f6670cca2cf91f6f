"""``SampleBatchBuilder``: rows added one at a time (``add_values(obs=..., actions=..., ...)``)
and built into a ``SampleBatch``, to write experience of a system rlconf does not step itself
with ``JsonWriter``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from runtime.core.sample_batch import SampleBatch


class SampleBatchBuilder:
    """Collects rows column by column; every row must give the same columns."""

    def __init__(self) -> None:
        self._columns: dict[str, list[Any]] = defaultdict(list)
        self.count = 0

    def add_values(self, **values: Any) -> None:
        """One row: a value per column (the reference's ``add_values``)."""
        if self.count and set(values) != set(self._columns):
            raise ValueError(
                f"SampleBatchBuilder.add_values: row {self.count} gives columns "
                f"{sorted(values)}; the rows before it gave {sorted(self._columns)}"
            )
        for name, value in values.items():
            self._columns[name].append(value)
        self.count += 1

    def add_batch(self, batch: SampleBatch) -> None:
        """Every row of ``batch``."""
        for i in range(len(batch)):
            self.add_values(**{name: column[i] for name, column in batch.items()})

    def build_and_reset(self) -> SampleBatch:
        """The rows added since the last call, as a batch (float64 values as float32, as a
        sampler makes them; dicts such as infos as an object column)."""
        columns: dict[str, Any] = {}
        for name, values in self._columns.items():
            if values and isinstance(values[0], dict):
                column = np.empty(len(values), dtype=object)
                column[:] = values
                columns[name] = column
                continue
            array = np.asarray(values)
            columns[name] = array.astype(np.float32) if array.dtype == np.float64 else array
        self._columns = defaultdict(list)
        self.count = 0
        return SampleBatch(columns)
