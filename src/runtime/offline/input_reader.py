"""``InputReader``: where a rollout worker's training batches come from when ``input`` is not
the sampler (files, a mix of sources, a policy server, a user's reader), and
``NormalizingReader``, the reference's action normalisation of what is read: unless
``actions_in_input_normalized``, Box actions in the input are env actions and, with
``normalize_actions``, mapped into the policy's [-1, 1] space as they are read."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import EpisodeMetrics


class InputReader:
    """A source of experience: ``next()`` returns the next batch (a ``SampleBatch`` of one
    policy's rows, or a ``MultiAgentBatch``). A reader that sees whole episodes (a policy
    server) may report them through ``pop_metrics()``; the worker adds them to its episode
    metrics."""

    def next(self) -> SampleBatch | MultiAgentBatch:
        raise NotImplementedError(f"{type(self).__name__}.next()")

    def pop_metrics(self) -> list[EpisodeMetrics]:
        """The episodes finished since the last call (none for files)."""
        return []

    def close(self) -> None:
        """Release what the reader holds (a server's port); a no-op for most readers."""


def close_reader(reader: Any) -> None:
    """``reader.close()`` where it has one: wrappers pass their worker's stop on to what they
    wrap."""
    close = getattr(reader, "close", None)
    if callable(close):
        close()


class NormalizingReader(InputReader):
    """A reader whose batches have their actions normalised into the policy's space (the
    inverse of the unsquashing the env runner applies to the policy's actions)."""

    def __init__(self, reader: Any, space: gym.spaces.Box) -> None:
        self.reader = reader
        self.low = space.low
        self.span = space.high - space.low

    def next(self) -> SampleBatch | MultiAgentBatch:
        batch: SampleBatch | MultiAgentBatch = self.reader.next()
        for rows in _policy_batches(batch):
            actions = np.asarray(rows[SampleBatch.ACTIONS], dtype=np.float64)
            rows[SampleBatch.ACTIONS] = (2.0 * (actions - self.low) / self.span - 1.0).astype(
                np.float32
            )
        return batch

    def pop_metrics(self) -> list[EpisodeMetrics]:
        pop = getattr(self.reader, "pop_metrics", None)
        return list(pop()) if pop is not None else []

    def close(self) -> None:
        close_reader(self.reader)


def needs_normalizing(space: gym.Space[Any], normalize_actions: bool, normalized: bool) -> bool:
    """Whether actions read for a policy of ``space`` are mapped into [-1, 1]."""
    return (
        not normalized
        and normalize_actions
        and isinstance(space, gym.spaces.Box)
        and bool(np.all(np.isfinite(space.low)))
        and bool(np.all(np.isfinite(space.high)))
    )


def _policy_batches(batch: SampleBatch | MultiAgentBatch) -> list[SampleBatch]:
    if isinstance(batch, MultiAgentBatch):
        return list(batch.policy_batches.values())
    return [batch]
