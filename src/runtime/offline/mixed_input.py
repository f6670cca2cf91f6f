"""``MixedInput``: ``input={source: probability}``: each batch comes from one source, drawn
with those probabilities (``"sampler"`` samples the worker's envs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import EpisodeMetrics
from runtime.offline.input_reader import InputReader, close_reader


class MixedInput(InputReader):
    """Draws the source of each batch from ``readers`` with the probabilities ``weights``
    (normalised to sum to 1; the draw is seeded)."""

    def __init__(
        self, readers: Mapping[str, Any], weights: Mapping[str, float], seed: int | None = None
    ) -> None:
        self.names = list(readers)
        self.readers = [readers[name] for name in self.names]
        total = float(sum(weights[name] for name in self.names))
        if total <= 0:
            raise ValueError(f"input={dict(weights)!r}: the probabilities sum to 0")
        self.probabilities = np.array([weights[name] / total for name in self.names])
        self._rng = np.random.default_rng(seed)

    def next(self) -> SampleBatch | MultiAgentBatch:
        index = int(self._rng.choice(len(self.readers), p=self.probabilities))
        batch: SampleBatch | MultiAgentBatch = self.readers[index].next()
        return batch

    def pop_metrics(self) -> list[EpisodeMetrics]:
        out: list[EpisodeMetrics] = []
        for reader in self.readers:
            pop: Callable[[], list[EpisodeMetrics]] | None = getattr(reader, "pop_metrics", None)
            if pop is not None:
                out += pop()
        return out

    def close(self) -> None:
        for reader in self.readers:
            close_reader(reader)
