"""``MixedInput``: ``input={source: probability}``: each batch comes from one source, drawn
with those probabilities (``"sampler"`` samples the worker's envs), and every batch of a policy
holds the same columns whichever source it came from (``mixed_columns``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import EpisodeMetrics
from runtime.offline.input_reader import InputReader, close_reader
from runtime.offline.mixed_columns import (
    columns_by_policy,
    common_columns,
    dropped_columns,
    keep_columns,
)

logger = logging.getLogger(__name__)


class MixedInput(InputReader):
    """Draws the source of each batch from ``readers`` with the probabilities ``weights``
    (normalised to sum to 1; the draw is seeded). Before the first batch it reads one batch of
    every source (each handed out when its source is next drawn) to learn the columns all of
    them give each policy; every batch is cut down to those."""

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
        #: By policy, the columns every batch keeps (None until the first ``next()``).
        self.columns: dict[str, frozenset[str]] | None = None
        self._first: dict[int, SampleBatch | MultiAgentBatch] = {}

    def next(self) -> SampleBatch | MultiAgentBatch:
        if self.columns is None:
            self._learn_columns()
        assert self.columns is not None
        index = int(self._rng.choice(len(self.readers), p=self.probabilities))
        # A source's first batch, read to learn its columns, is handed out first.
        batch = self._first.pop(index) if index in self._first else self.readers[index].next()
        for pid, columns in columns_by_policy(batch).items():
            # A policy no source's first batch had rows of: its first rows decide.
            self.columns.setdefault(pid, columns)
        return keep_columns(batch, self.columns, self.names[index])

    def _learn_columns(self) -> None:
        self._first = {index: reader.next() for index, reader in enumerate(self.readers)}
        self.columns = common_columns(self._first.values())
        dropped = dropped_columns(
            {self.names[index]: batch for index, batch in self._first.items()}, self.columns
        )
        if dropped:
            logger.info(
                "input=%r: the sources' rows differ; only the columns all of them give are "
                "kept (dropped: %s)",
                dict(zip(self.names, self.probabilities.tolist(), strict=True)),
                "; ".join(f"from {name!r}: {', '.join(cols)}" for name, cols in dropped.items()),
            )

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
