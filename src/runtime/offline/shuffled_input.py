"""``ShuffledInput``: ``shuffle_buffer_size``: batches pass through a buffer of that many
and each ``next()`` returns a random one of them (the buffer fills first)."""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import EpisodeMetrics
from runtime.offline.input_reader import InputReader, close_reader


class ShuffledInput(InputReader):
    def __init__(self, child: Any, size: int, seed: int | None = None) -> None:
        self.child = child
        self.size = int(size)
        self._buffer: list[SampleBatch | MultiAgentBatch] = []
        self._rng = np.random.default_rng(seed)

    def next(self) -> SampleBatch | MultiAgentBatch:
        if self.size <= 1:
            batch: SampleBatch | MultiAgentBatch = self.child.next()
            return batch
        while len(self._buffer) < self.size:
            self._buffer.append(self.child.next())
        index = int(self._rng.integers(len(self._buffer)))
        out = self._buffer[index]
        self._buffer[index] = self.child.next()
        return out

    def pop_metrics(self) -> list[EpisodeMetrics]:
        pop = getattr(self.child, "pop_metrics", None)
        return list(pop()) if pop is not None else []

    def close(self) -> None:
        close_reader(self.child)
